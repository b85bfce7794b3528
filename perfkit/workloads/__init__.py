"""What perfkit measures: models, data, training steps, layers, FLOP accounting, PALEO, kernels."""
