"""The project's records (SPEC §2-§6) and validating JSON Lines I/O.

Every part of egohorizon speaks these records: events of the L1-L5 hierarchy, recordings, forecast
points and predictions, QA items and answers, segments, hand boxes. Each record type declares its
fields once (``declared`` on the dataclass; ``FIELDS()`` reads them back); ``from_dict`` checks a
parsed JSON object against that declaration and reports *every* defect with the field's name and what was expected, and ``read_jsonl`` adds the file
and line. Reading never stops at the first bad line, so one run lists all the defects of a file.

Only the standard library is imported here: ``egohorizon score`` and ``egohorizon data validate``
must start fast and work without the training stack.

A package by record family (issue 24): checks (defects, field checks), record (the base), events,
forecast, qa, hands, captions, jsonl (reading and writing). Everything is re-exported here, so
``from egohorizon.schema import Event, load_jsonl`` is the way to import it.
"""

from egohorizon.schema.captions import (  # noqa: F401  (re-exported)
    CaptionPrediction,
    CaptionWindow,
)
from egohorizon.schema.checks import (  # noqa: F401  (re-exported)
    HANDS,
    LEVELS,
    SCHEMA_VERSION,
    SEGMENT_KINDS,
    Check,
    Defect,
    RecordError,
    answer_letter,
    box,
    candidate,
    caption_action,
    context_event,
    integer,
    level,
    list_of,
    mapping,
    non_negative_int,
    nonempty_text,
    number,
    one_of,
    optional,
    positive_int,
    text,
    window,
)
from egohorizon.schema.events import (  # noqa: F401  (re-exported)
    Event,
    Recording,
)
from egohorizon.schema.forecast import (  # noqa: F401  (re-exported)
    ForecastPoint,
    ForecastPrediction,
    RankedCandidates,
)
from egohorizon.schema.hands import (  # noqa: F401  (re-exported)
    BoxPrediction,
    HandBox,
    Segment,
)
from egohorizon.schema.jsonl import (  # noqa: F401  (re-exported)
    RECORD_TYPES,
    ReadResult,
    detect_record_type,
    dumps,
    iter_json_lines,
    load_jsonl,
    read_jsonl,
    record_type_of,
    remove_stale_temps,
    write_jsonl,
)
from egohorizon.schema.qa import (  # noqa: F401  (re-exported)
    EGOMONTH_TASK_LEVELS,
    Evidence,
    QAItem,
    QAPrediction,
    evidence_item,
    task_key,
)
from egohorizon.schema.record import (  # noqa: F401  (re-exported)
    EPOCH_CLOCK_FROM,
    Record,
)
