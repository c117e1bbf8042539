"""Starting points: word vectors, the language model, the sentence stage and transfer (--init)."""
