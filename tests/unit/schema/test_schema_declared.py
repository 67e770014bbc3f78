"""Each record field is declared once, on the dataclass: FIELDS() is read back from it."""

import dataclasses

from egohorizon import schema
from egohorizon.schema import checks
from egohorizon.schema.record import Record


def _record_classes():
    found = [value for value in vars(schema).values()
             if isinstance(value, type) and issubclass(value, Record) and value is not Record]
    assert len(found) >= 10  # events, recordings, points, predictions, QA, hands, captions, ...
    return found


def test_every_field_but_extra_has_its_check_and_fields_reads_them_in_order():
    for cls in _record_classes():
        names = [f.name for f in dataclasses.fields(cls) if f.name != "extra"]
        assert list(cls.FIELDS()) == names, cls.__name__
        for name, (check, required) in cls.FIELDS().items():
            assert callable(check) and isinstance(required, bool), (cls.__name__, name)


def test_the_event_declaration_by_hand():
    fields = schema.Event.FIELDS()
    assert fields["text"] == (checks.text, True) and fields["level"] == (checks.level, True)
    assert fields["parent"][1] is False and fields["children"][1] is False
    # a record built in code gets the declared defaults, fresh lists each time
    a, b = schema.Event(), schema.Event()
    assert a.children == [] and a.children is not b.children and a.parent is None


def test_from_dict_still_reports_every_defect_by_field():
    record, problems = schema.Event.from_dict({"id": "e1", "participant": "p", "day": "2024-01-01",
                                               "session": "s", "level": 9, "start": 5, "end": 1})
    assert record is None
    fields = [field for field, _ in problems]
    assert "text" in fields and "level" in fields and "end" in fields  # missing, out of range, end < start
