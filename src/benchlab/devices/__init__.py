"""Transports that reach a device and run the agent there: local, ssh (Fabric), exec."""
