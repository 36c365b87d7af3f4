"""One module per experiment. Each defines TIMEOUT, memory(params) -> (resident, address space)
in bytes, and run(ctx) -> Result; the list of experiments is the C workload table."""
