"""cepopt.executor: reference enumerators, per-partition kernels, the Spark driver, cost metering."""
