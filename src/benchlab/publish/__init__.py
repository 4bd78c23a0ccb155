"""What the public sees: the Plotly charts and the static site, built from public files only."""
