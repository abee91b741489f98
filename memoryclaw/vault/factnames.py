"""The names the fact format gives meaning to: the fact files about the owner and the fields
of standing instructions and preferences (kept apart from the fact parser, which a recall
never needs)."""

from __future__ import annotations

# A plain line of a fact folder's instructions.md (a hand-written "- Always answer in metric
# units.") is the owner's standing instruction, as consolidation's "- User (instruction): …"
# lines there are.  A plain line of its preferences.md ("- Vegetarian who eats fish now and
# then") stays a note, which recall holds in force as a preference too
# (memoryclaw.recall.standing.in_force); a "Key: value" line there is a fact like any other.
INSTRUCTIONS_FILE, PREFERENCES_FILE = "instructions.md", "preferences.md"
# The fields of standing instructions and preferences (memoryclaw.recall.standing).
INSTRUCTION, PREFERENCE = "instruction", "preference"
STANDING_FIELDS = (INSTRUCTION, PREFERENCE)
# The fact files about the owner, in semantic/ or any folder under it: there a line that names
# no field ("- Coffee: flat white", a plain "- Vegetarian") is about something of the owner's,
# where one that does ("- Joanna (likes): reading") is about whoever it names.
OWNER_FILES = (PREFERENCES_FILE, INSTRUCTIONS_FILE)
UNNAMED_FIELDS = ("value", "note")
# The entity of a plain line written before any heading of its file: it names nobody.
UNNAMED_ENTITY = "note"
# The entity of the facts consolidation reads from the owner's own turns (what "my" stands for
# in a turn without a speaker's name).
OWNER_ENTITY = "User"
# How a line of a raw log names the owner's turn: a user turn without a speaker's name
# (TurnView.label), as the index keeps it in passages.speaker.
OWNER_LABEL = "User"
# How it names the agent's turn (an assistant turn without a name).
AGENT_LABEL = "Assistant"
