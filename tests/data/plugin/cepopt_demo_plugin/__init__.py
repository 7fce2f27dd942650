"""A tiny third-party extension of cepopt, for tests: a Sharon method, a stream generator and an
experiment, declared as entry points in ``cepopt_demo_plugin-0.1.dist-info/entry_points.txt``."""
