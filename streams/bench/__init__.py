"""`callqa bench`: callqa and its Python streaming peers, side by side on the same generated events."""
