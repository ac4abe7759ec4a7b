"""The model zoo: `spec` (a model is data, no torch needed to check one), `attention` (the one core), `model`."""
