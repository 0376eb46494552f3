"""What the tests of lines share: the skill catalog's values and the centre's defaults."""

from queues_app.lines.records import Defaults

DIMENSIONS = {"language": ["English", "French", "Spanish"], "gender": ["F", "M", "X"]}
CENTRE = Defaults(service_level_seconds=20, service_level_target=0.8)
