"""What benchlab needs of the operating system besides files: worker processes that behave
alike on every platform (`pool`), lock files created complete (`locks`) and the plug-ins
installed packages register in an entry point group (`plugins`)."""
