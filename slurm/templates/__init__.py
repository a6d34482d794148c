"""sbatch templates, shipped as package data (``iolab examples --templates`` copies them)."""
