"""The papers' studies, as commands that run, summarise and draw them."""
