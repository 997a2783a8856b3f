#!/usr/bin/python3
"""A desktop notification server for the end-to-end test: it owns
org.freedesktop.Notifications on the session bus, as a desktop's would, and writes each
Notify call it is sent to LOG as one JSON line (app_name, summary, body). Needs the system
python's `gi` (Debian's python3-gi).

Usage: notification_server.py LOG   (prints "ready" once it owns the name)
"""

import json
import sys

from gi.repository import Gio, GLib

INTERFACE = """
<node>
  <interface name="org.freedesktop.Notifications">
    <method name="Notify">
      <arg type="s" direction="in"/><arg type="u" direction="in"/>
      <arg type="s" direction="in"/><arg type="s" direction="in"/>
      <arg type="s" direction="in"/><arg type="as" direction="in"/>
      <arg type="a{sv}" direction="in"/><arg type="i" direction="in"/>
      <arg type="u" direction="out"/>
    </method>
    <method name="GetCapabilities"><arg type="as" direction="out"/></method>
    <method name="GetServerInformation">
      <arg type="s" direction="out"/><arg type="s" direction="out"/>
      <arg type="s" direction="out"/><arg type="s" direction="out"/>
    </method>
    <method name="CloseNotification"><arg type="u" direction="in"/></method>
  </interface>
</node>
"""

log_path = sys.argv[1]
sent = 0


def on_call(_bus, _sender, _path, _interface, method, parameters, invocation):
    global sent
    if method == "Notify":
        app_name, _, _, summary, body, *_ = parameters.unpack()
        with open(log_path, "a") as log:
            log.write(json.dumps({"app_name": app_name, "summary": summary, "body": body}) + "\n")
        sent += 1
        invocation.return_value(GLib.Variant("(u)", (sent,)))
    elif method == "GetCapabilities":
        invocation.return_value(GLib.Variant("(as)", (["body"],)))
    elif method == "GetServerInformation":
        invocation.return_value(GLib.Variant("(ssss)", ("e2e", "deskhand", "1", "1.2")))
    else:
        invocation.return_value(None)


def on_bus(bus, _name):
    node = Gio.DBusNodeInfo.new_for_xml(INTERFACE)
    bus.register_object("/org/freedesktop/Notifications", node.interfaces[0], on_call)


def on_name(_bus, _name):
    print("ready", flush=True)


def on_lost(_bus, _name):
    sys.exit("notification_server: org.freedesktop.Notifications is taken on this bus")


Gio.bus_own_name(Gio.BusType.SESSION, "org.freedesktop.Notifications",
                 Gio.BusNameOwnerFlags.NONE, on_bus, on_name, on_lost)
GLib.MainLoop().run()
