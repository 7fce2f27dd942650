"""cepopt.formulations: CP-SAT and MILP models, one module per family (build, solve, decode)."""
