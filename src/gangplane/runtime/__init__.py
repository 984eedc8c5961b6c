"""The runtime framework: TrainJob + runtime -> RuntimeInfo -> desired objects (port of Trainer pkg/runtime)."""
