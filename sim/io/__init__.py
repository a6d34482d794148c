"""The I/O level's simulator: the event and stepped engines, their scenario and recorder."""
