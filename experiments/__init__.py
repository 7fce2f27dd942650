"""cepopt.experiments: each experiment reproduces a paper figure or asks a new question."""
