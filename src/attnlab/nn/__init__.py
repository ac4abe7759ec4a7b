"""The model zoo: `spec` (a model is data, no torch needed to check one), `attention` (the one core), `model`
(the language models), `seq2seq` (S1's recurrent encoder-decoder)."""
