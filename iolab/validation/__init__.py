"""Both runtimes on one spec, and how far apart their traces are (`iolab validate`)."""
