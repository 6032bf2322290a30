"""``order create --priority``: what it accepts and how it refuses."""

import pytest

from scheduler.manage import orders


def _parse(capsys, *argv):
    parser = orders.CreateOrders(None, None).get_parser(
        'barbican-retry-manage order create')
    return parser.parse_args(['--type', 'certificate'] + list(argv))


def test_priority_defaults_to_0_and_takes_0_to_9(capsys):
    assert _parse(capsys).priority == 0
    assert _parse(capsys, '--priority', '9').priority == 9
    assert _parse(capsys, '--priority', '0').priority == 0


@pytest.mark.parametrize('value', ['10', '-1', 'high', '1.5'])
def test_a_priority_out_of_range_is_a_usage_error(capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        _parse(capsys, '--priority', value)

    assert exit_info.value.code == 2
    assert ("argument --priority: must be an integer from 0 to 9, not %r"
            % value) in capsys.readouterr().err
