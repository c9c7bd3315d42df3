"""The only code that touches hardware, the OS or another interpreter."""
