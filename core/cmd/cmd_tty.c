/*
 * The host's terminal while a command in a sandbox has one (qsup run -t,
 * qsup exec -t): stdin raw, so every key goes to the command, and put
 * back on every way out (the caller's own ends, and exit() from anywhere,
 * through atexit); and its size, to tell the guest's terminal.
 */
#include <sys/ioctl.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cmd.h"

static struct termios		 cmd_tty_saved;
static volatile sig_atomic_t	 cmd_tty_is_raw;
static int			 cmd_tty_atexit;

void
cmd_tty_restore(void)
{
	if (!cmd_tty_is_raw)
		return;
	cmd_tty_is_raw = 0;
	(void)tcsetattr(STDIN_FILENO, TCSANOW, &cmd_tty_saved);
}

/* A terminal on stdin: raw until cmd_tty_restore. */
void
cmd_tty_raw(void)
{
	struct termios	t;

	if (cmd_tty_is_raw || !isatty(STDIN_FILENO) ||
	    tcgetattr(STDIN_FILENO, &cmd_tty_saved) == -1)
		return;
	if (!cmd_tty_atexit) {
		atexit(cmd_tty_restore);
		cmd_tty_atexit = 1;
	}
	t = cmd_tty_saved;
	cfmakeraw(&t);
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == -1) {
		log_debug("raw mode for stdin: %s", strerror(errno));
		return;
	}
	cmd_tty_is_raw = 1;
}

/*
 * Our terminal's size: stdout's, else stdin's, each at most CMD_TTY_MAX
 * (what the agent takes); -1 and 0 x 0 when neither is a terminal.
 */
int
cmd_tty_size(unsigned *rows, unsigned *cols)
{
	struct winsize	ws;

	*rows = *cols = 0;
	if ((ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == -1 &&
	    ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == -1) || ws.ws_row == 0 ||
	    ws.ws_col == 0)
		return (-1);
	*rows = ws.ws_row > CMD_TTY_MAX ? CMD_TTY_MAX : ws.ws_row;
	*cols = ws.ws_col > CMD_TTY_MAX ? CMD_TTY_MAX : ws.ws_col;
	return (0);
}
