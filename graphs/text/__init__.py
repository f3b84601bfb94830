"""Text processing that works for Japanese and English: normalisation and tokenisation."""
