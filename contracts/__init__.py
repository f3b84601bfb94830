"""Wire contracts: msgspec Structs for every request, response, state and domain type.

Nothing here imports anything but msgspec; `registry.EXPORTED` lists what `make schema`
writes to `contracts/schema/` for the Go orchestrator.
"""
