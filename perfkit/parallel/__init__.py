"""Several GPUs: the torchrun launcher, what each rank measures, collectives and scaling figures."""
