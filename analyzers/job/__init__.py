"""The job stage: many ranks of one distributed run analysed together (docs/multirank.md)."""
