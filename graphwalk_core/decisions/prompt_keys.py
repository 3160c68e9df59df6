"""The keys of the walk's choice questions (written by ``traversal.prompts``, read by the deciders).

Deciders sit below the traversal package, so the keys live here where both can import them.
"""

from __future__ import annotations

#: Instructions: the task text, the start node names, the path so far, where the walk stands, the
#: expected answer type.
TASK = "task"
START = "start"
PATH = "path"
CURRENT = "current"
EXPECTED_ANSWER_TYPE = "expected_answer_type"
#: Options and the current position: a neighbor node, an edge as text, a relation and its direction,
#: the names a relation leads to, how many, example names, the node's type and summary, a gloss.
NODE = "node"
EDGE = "edge"
RELATION = "relation"
DIRECTION = "direction"
LEADS_TO = "leads_to"
COUNT = "count"
EXAMPLES = "examples"
TYPE = "type"
SUMMARY = "summary"
MEANING = "meaning"
