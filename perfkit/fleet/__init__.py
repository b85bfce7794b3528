"""The suite across a fleet: a selection submitted to Slurm partitions through submitit, its replicates
collected, stored and judged as one night's runs per hardware."""
