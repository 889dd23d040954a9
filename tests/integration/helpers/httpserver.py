# A plain HTTP server on 127.0.0.1 for the network tests: serves DIR, takes
# any free port, writes the port to PORTFILE once it listens, and logs each
# request line to LOG, so a test can tell whether anything reached it.
#   python3 httpserver.py DIR PORTFILE LOG
import http.server
import os
import sys

root, portfile, log = sys.argv[1:4]
os.chdir(root)


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):
        with open(log, "a") as f:
            f.write("%s %s\n" % (self.client_address[0], self.requestline))


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
