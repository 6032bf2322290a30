"""The headless Chromium of the console's browser tests, driven by
Selenium through the distribution's chromedriver.

``tests/functional/services.sh install`` installs Debian's ``chromium``
and ``chromium-driver``; nothing is downloaded at run time: the driver's
path is given to Selenium (so Selenium Manager, which would fetch one,
is never needed) and ``SE_OFFLINE`` forbids it in any case. Each browser
gets a fresh profile directory and the flags that keep Chromium from
calling home, so that it works as root (``--no-sandbox``) and as an
ordinary user, without a display.
"""

import os
import shutil
import tempfile

import pytest

CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
FLAGS = ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
         '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync',
         '--disable-dev-shm-usage', '--window-size=1280,900')


def available():
    """True if the browser, its driver and Selenium are installed."""
    if not all(os.access(path, os.X_OK) for path in (CHROMIUM,
                                                     CHROMEDRIVER)):
        return False
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return True


def require():
    """Skip without the browser (or fail, under bin/run-tests.sh, whose
    install provides it)."""
    if available():
        return
    message = ('no %s, %s or selenium (bin/run-tests.sh installs them)'
               % (CHROMIUM, CHROMEDRIVER))
    if os.environ.get('BARBICAN_RETRY_TEST_REQUIRE_SERVICES') == '1':
        pytest.fail(message)
    pytest.skip(message)


class Browser:
    """A headless Chromium with a profile of its own; ``close`` quits it
    and removes the profile."""

    def __init__(self):
        # Selenium Manager is never asked for a driver or a browser.
        os.environ['SE_OFFLINE'] = 'true'
        from selenium import webdriver
        from selenium.webdriver.chrome import service
        self._profile = tempfile.mkdtemp(prefix='console-chromium-')
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS + ('--user-data-dir=%s' % self._profile,):
            options.add_argument(flag)
        self.driver = webdriver.Chrome(
            service=service.Service(executable_path=CHROMEDRIVER),
            options=options)
        self.driver.set_page_load_timeout(60)

    def close(self):
        """Quit the browser and remove its profile."""
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self._profile, ignore_errors=True)
