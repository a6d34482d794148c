"""Sample specs, shipped as package data (``iolab examples`` lists and copies them)."""
