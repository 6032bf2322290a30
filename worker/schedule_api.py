"""The public Python API of periodic orders, now ``worker.api.schedules``.

Kept for one release so that the callers of ``worker.schedule_api``
keep working (release note ``api-package``): its names are those of
``worker.api.schedules``, whose docstring says what they do. Import
``worker.api.schedules`` instead; this module goes in the release after.
"""

from worker.api.schedules import DEFAULT_OVERLAP
from worker.api.schedules import DEFAULT_TIMEZONE
from worker.api.schedules import InvalidSchedule
from worker.api.schedules import MAX_EVERY_SECONDS
from worker.api.schedules import MIN_EVERY_SECONDS
from worker.api.schedules import OrderAPIError
from worker.api.schedules import OVERLAP_POLICIES
from worker.api.schedules import parse_duration
from worker.api.schedules import Schedule
from worker.api.schedules import ScheduleAPI
from worker.api.schedules import ScheduleNotFound

__all__ = ['ScheduleAPI', 'Schedule', 'ScheduleNotFound', 'InvalidSchedule',
           'OrderAPIError', 'parse_duration', 'MIN_EVERY_SECONDS',
           'MAX_EVERY_SECONDS', 'OVERLAP_POLICIES', 'DEFAULT_OVERLAP',
           'DEFAULT_TIMEZONE']
