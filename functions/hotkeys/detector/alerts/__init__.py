"""Alert rules (pure), messages (pure) and the desk that runs incidents through the ports."""
