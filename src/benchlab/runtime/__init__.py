"""What benchlab needs of the operating system besides files: worker processes that behave
alike on every platform (`pool`) and lock files created complete (`locks`)."""
