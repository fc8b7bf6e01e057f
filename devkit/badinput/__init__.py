"""Bad inputs for the engine: the known cases (corpus), the mutations and the seeded fuzzer."""
