#!/usr/bin/python3
"""A fake systemd-logind (and the bit of systemd it needs) on a private D-Bus, for the tests of
systemd-logind.ts. Not part of the kubelet.

Starts its own dbus-daemon, takes org.freedesktop.login1 and org.freedesktop.systemd1 there, prints
`address <bus address>` once ready, and exits (stopping the daemon) when its stdin closes.

  login1 Manager: Inhibit(ssss) -> h (a pipe; the lock is held while its write end is open),
                  PrepareForShutdown(b) signal, property InhibitDelayMaxUSec.
  systemd1 Manager: KillUnit(ssi) on systemd-logind.service with SIGHUP re-reads
                  <drop-in dir>/99-kubelet.conf (InhibitDelayMaxSec=N).
  test.Control (on the login1 object): Emit(b), Inhibitors() -> u, LastInhibit() -> (ssss).

Usage: fake-logind.py DROP_IN_DIR INHIBIT_DELAY_MAX_USEC
"""
import os
import re
import subprocess
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

LOGIN1 = 'org.freedesktop.login1.Manager'
SYSTEMD1 = 'org.freedesktop.systemd1.Manager'


class Login1(dbus.service.Object):
    def __init__(self, bus, delay_usec):
        super().__init__(bus, '/org/freedesktop/login1')
        self.delay_usec = delay_usec
        self.open_locks = 0
        self.last = ('', '', '', '')

    @dbus.service.method(LOGIN1, in_signature='ssss', out_signature='h')
    def Inhibit(self, what, who, why, mode):
        r, w = os.pipe()
        self.open_locks += 1
        self.last = (what, who, why, mode)
        GLib.io_add_watch(r, GLib.IO_HUP | GLib.IO_ERR, self._released)
        fd = dbus.types.UnixFd(w)
        os.close(w)
        return fd

    def _released(self, fd, _cond):
        os.close(fd)
        self.open_locks -= 1
        return False

    @dbus.service.signal(LOGIN1, signature='b')
    def PrepareForShutdown(self, active):
        pass

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature='ss', out_signature='v')
    def Get(self, interface, prop):
        if interface == LOGIN1 and prop == 'InhibitDelayMaxUSec':
            return dbus.UInt64(self.delay_usec)
        raise dbus.exceptions.DBusException('org.freedesktop.DBus.Error.UnknownProperty', prop)

    @dbus.service.method('test.Control', in_signature='b')
    def Emit(self, active):
        self.PrepareForShutdown(active)

    @dbus.service.method('test.Control', out_signature='u')
    def Inhibitors(self):
        return self.open_locks

    @dbus.service.method('test.Control', out_signature='(ssss)')
    def LastInhibit(self):
        return self.last


class Systemd1(dbus.service.Object):
    def __init__(self, bus, login1, drop_in_dir):
        super().__init__(bus, '/org/freedesktop/systemd1')
        self.login1 = login1
        self.drop_in = os.path.join(drop_in_dir, '99-kubelet.conf')

    @dbus.service.method(SYSTEMD1, in_signature='ssi')
    def KillUnit(self, unit, who, signal):
        if unit != 'systemd-logind.service' or signal != 1:
            return
        try:
            with open(self.drop_in) as f:
                m = re.search(r'^InhibitDelayMaxSec=(\d+)$', f.read(), re.M)
        except OSError:
            return
        if m:
            self.login1.delay_usec = int(m.group(1)) * 1000000


def main():
    drop_in_dir, delay_usec = sys.argv[1], int(sys.argv[2])
    daemon = subprocess.Popen(
        ['dbus-daemon', '--session', '--nofork', '--nopidfile', '--print-address=1'],
        stdout=subprocess.PIPE, text=True)
    address = daemon.stdout.readline().strip()
    loop = GLib.MainLoop()
    try:
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.bus.BusConnection(address)
        names = [dbus.service.BusName(n, bus) for n in ('org.freedesktop.login1', 'org.freedesktop.systemd1')]
        login1 = Login1(bus, delay_usec)
        systemd1 = Systemd1(bus, login1, drop_in_dir)
        GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, lambda *_: loop.quit())
        print('address', address, flush=True)
        loop.run()
        del names, systemd1
    finally:
        daemon.terminate()
        daemon.wait(5)


if __name__ == '__main__':
    main()
