"""The proposal-quality agent (seed 004): Organizer/Advisor reports through validator → self-correction → render."""
