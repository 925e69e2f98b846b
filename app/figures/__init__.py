"""Pure builders of what the pages show, from analysis data: Plotly figures and the FF views."""
