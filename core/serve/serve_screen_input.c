/*
 * POST .../input's events, turned into QMP input-send-event arguments:
 * text as US-layout key strokes, key names as QEMU's qcodes, the mouse
 * through the tablet's absolute axes. Pure functions of the client's
 * JSON, so the 400 can name the event and field before QEMU sees any.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve_int.h"

#define SCREEN_ABS_MAX	0x7fff	/* QEMU's INPUT_EVENT_ABS_MAX */
#define SCREEN_SCROLL_MAX 50	/* wheel steps an event may take */

/* Names a client may write, and the qcode each stands for. */
static const struct {
	const char	*name;
	const char	*qcode;
} screen_key_alias[] = {
	{ "enter", "ret" }, { "return", "ret" }, { "space", "spc" },
	{ "escape", "esc" }, { "control", "ctrl" }, { "ctrl_l", "ctrl" },
	{ "alt_l", "alt" }, { "shift_l", "shift" }, { "super", "meta_l" },
	{ "win", "meta_l" }, { "meta", "meta_l" }, { "cmd", "meta_l" },
	{ "del", "delete" }, { "ins", "insert" }, { "pageup", "pgup" },
	{ "pagedown", "pgdn" }, { "page_up", "pgup" },
	{ "page_down", "pgdn" }, { "-", "minus" }, { "=", "equal" },
	{ "[", "bracket_left" }, { "]", "bracket_right" },
	{ ";", "semicolon" }, { "'", "apostrophe" }, { "`", "grave_accent" },
	{ "\\", "backslash" }, { ",", "comma" }, { ".", "dot" },
	{ "/", "slash" },
};

/* QEMU's own qcodes a client may name (beside letters, digits, f1-f12). */
static const char *const screen_qcodes[] = {
	"shift", "shift_r", "alt", "alt_r", "ctrl", "ctrl_r", "meta_l",
	"meta_r", "menu", "esc", "tab", "ret", "spc", "backspace", "caps_lock",
	"up", "down", "left", "right", "home", "end", "pgup", "pgdn",
	"insert", "delete", "print", "sysrq", "scroll_lock", "pause",
	"num_lock", "minus", "equal", "bracket_left", "bracket_right",
	"semicolon", "apostrophe", "grave_accent", "backslash", "comma",
	"dot", "slash",
};

/* A name (lower case) as a qcode, or NULL. */
const char *
screen_qcode(const char *name)
{
	size_t	i;

	if (strlen(name) == 1 && ((name[0] >= 'a' && name[0] <= 'z') ||
	    (name[0] >= '0' && name[0] <= '9')))
		return (name);
	if (name[0] == 'f' && ((name[1] >= '1' && name[1] <= '9' &&
	    name[2] == '\0') || (name[1] == '1' && name[2] >= '0' &&
	    name[2] <= '2' && name[3] == '\0')))
		return (name);
	for (i = 0; i < sizeof screen_qcodes / sizeof screen_qcodes[0]; i++)
		if (strcmp(name, screen_qcodes[i]) == 0)
			return (screen_qcodes[i]);
	for (i = 0; i < sizeof screen_key_alias / sizeof screen_key_alias[0];
	    i++)
		if (strcmp(name, screen_key_alias[i].name) == 0)
			return (screen_key_alias[i].qcode);
	return (NULL);
}

/* A character of US-layout text as a qcode (and shift), or NULL. */
static const char *
screen_char(int c, int *shift)
{
	static const char	 shifted[] = "~!@#$%^&*()_+{}|:\"<>?";
	static const char	 plain[] = "`1234567890-=[]\\;',./";
	static char		 one[2];
	const char		*p;

	*shift = 0;
	if (c >= 'A' && c <= 'Z') {
		*shift = 1;
		c = c - 'A' + 'a';
	}
	if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
		one[0] = (char)c;
		one[1] = '\0';
		return (one);
	}
	switch (c) {
	case ' ':
		return ("spc");
	case '\n':
		return ("ret");
	case '\t':
		return ("tab");
	}
	if (c != '\0' && (p = strchr(shifted, c)) != NULL) {
		*shift = 1;
		c = plain[p - shifted];
	}
	if (c != '\0' && strchr(plain, c) != NULL) {
		one[0] = (char)c;
		one[1] = '\0';
		return (screen_qcode(one));
	}
	return (NULL);
}

static void
screen_call_add(struct screen_calls *c, struct buf *events)
{
	c->args = xreallocarray(c->args, c->n + 1, sizeof *c->args);
	xasprintf(&c->args[c->n++], "{\"events\":[%s]}", events->data);
	buf_free(events);
}

/* One call: a key down or up. */
static void
screen_key(struct screen_calls *c, const char *qcode, int down)
{
	struct buf	b = { 0 };

	buf_printf(&b, "{\"type\":\"key\",\"data\":{\"down\":%s,\"key\":"
	    "{\"type\":\"qcode\",\"data\":\"%s\"}}}", down ? "true" : "false",
	    qcode);
	screen_call_add(c, &b);
}

/* One call: the pointer to (x, y) of a w x h screen. */
static void
screen_move(struct screen_calls *c, int x, int y, int w, int h)
{
	struct buf	b = { 0 };

	buf_printf(&b, "{\"type\":\"abs\",\"data\":{\"axis\":\"x\",\"value\":"
	    "%d}},{\"type\":\"abs\",\"data\":{\"axis\":\"y\",\"value\":%d}}",
	    w > 1 ? (int)((long long)x * SCREEN_ABS_MAX / (w - 1)) : 0,
	    h > 1 ? (int)((long long)y * SCREEN_ABS_MAX / (h - 1)) : 0);
	screen_call_add(c, &b);
}

/* One call: a button down or up. */
static void
screen_button(struct screen_calls *c, const char *button, int down)
{
	struct buf	b = { 0 };

	buf_printf(&b, "{\"type\":\"btn\",\"data\":{\"down\":%s,\"button\":"
	    "\"%s\"}}", down ? "true" : "false", button);
	screen_call_add(c, &b);
}

/* A point {x, y} (or the event's own x, y) on the screen. */
static int
screen_point(json_t *j, const char *at, int w, int h, int *x, int *y,
    struct serve_error *err)
{
	json_t	*jx = json_object_get(j, "x"), *jy = json_object_get(j, "y");
	char	 field[96];

	if (!json_is_integer(jx) || json_integer_value(jx) < 0 ||
	    json_integer_value(jx) >= w) {
		snprintf(field, sizeof field, "%s.x", at);
		return (serve_bad_field(err, field, "expected an integer "
		    "within the screen's width"));
	}
	if (!json_is_integer(jy) || json_integer_value(jy) < 0 ||
	    json_integer_value(jy) >= h) {
		snprintf(field, sizeof field, "%s.y", at);
		return (serve_bad_field(err, field, "expected an integer "
		    "within the screen's height"));
	}
	*x = (int)json_integer_value(jx);
	*y = (int)json_integer_value(jy);
	return (0);
}

static int
screen_text(struct screen_calls *c, json_t *ev, const char *at,
    struct serve_error *err)
{
	const char	*text = json_string_value(json_object_get(ev, "text"));
	const char	*q;
	char		 field[64], why[96];
	size_t		 i;
	int		 shift;

	snprintf(field, sizeof field, "%s.text", at);
	if (text == NULL || *text == '\0')
		return (serve_bad_field(err, field, "expected a non-empty "
		    "string"));
	if (strlen(text) > SCREEN_TEXT_MAX)
		return (serve_bad_field(err, field, "longer than 4096 bytes"));
	for (i = 0; text[i] != '\0'; i++) {
		if ((q = screen_char((unsigned char)text[i], &shift)) == NULL) {
			snprintf(why, sizeof why, "character %zu (0x%02x) has "
			    "no key on a US keyboard", i,
			    (unsigned char)text[i]);
			return (serve_bad_field(err, field, why));
		}
		if (shift)
			screen_key(c, "shift", 1);
		screen_key(c, q, 1);
		screen_key(c, q, 0);
		if (shift)
			screen_key(c, "shift", 0);
	}
	return (0);
}

static int
screen_keys(struct screen_calls *c, json_t *ev, const char *at,
    struct serve_error *err)
{
	json_t		*keys = json_object_get(ev, "keys"), *k;
	const char	*q[8];
	char		 field[64], why[128], low[32];
	size_t		 i, n, j;

	snprintf(field, sizeof field, "%s.keys", at);
	if (!json_is_array(keys) || (n = json_array_size(keys)) == 0 ||
	    n > 8)
		return (serve_bad_field(err, field, "expected 1 to 8 key "
		    "names"));
	json_array_foreach(keys, i, k) {
		if (!json_is_string(k) || json_string_length(k) >= sizeof low)
			return (serve_bad_field(err, field, "expected key "
			    "names"));
		for (j = 0; j <= json_string_length(k); j++)
			low[j] = (char)tolower((unsigned char)
			    json_string_value(k)[j]);
		if ((q[i] = screen_qcode(low)) == NULL) {
			snprintf(why, sizeof why, "unknown key \"%s\" (a-z, "
			    "0-9, f1-f12, ctrl, alt, shift, enter, ...)", low);
			return (serve_bad_field(err, field, why));
		}
	}
	/* A chord: down in order, up in reverse. */
	for (i = 0; i < n; i++)
		screen_key(c, q[i], 1);
	for (i = n; i-- > 0;)
		screen_key(c, q[i], 0);
	return (0);
}

static int
screen_mouse_button(json_t *ev, const char *at, const char **button,
    struct serve_error *err)
{
	json_t		*b = json_object_get(ev, "button");
	const char	*s;
	char		 field[64];

	*button = "left";
	if (b == NULL)
		return (0);
	s = json_string_value(b);
	if (s == NULL || (strcmp(s, "left") != 0 && strcmp(s, "right") != 0 &&
	    strcmp(s, "middle") != 0)) {
		snprintf(field, sizeof field, "%s.button", at);
		return (serve_bad_field(err, field, "expected \"left\", "
		    "\"right\" or \"middle\""));
	}
	*button = s;
	return (0);
}

static int
screen_mouse(struct screen_calls *c, json_t *ev, const char *type,
    const char *at, int w, int h, struct serve_error *err)
{
	const char	*button;
	char		 where[64];
	json_t		*dy;
	int		 x, y, x2, y2, i, n;

	if (strcmp(type, "drag") == 0) {
		snprintf(where, sizeof where, "%s.from", at);
		if (screen_point(json_object_get(ev, "from"), where, w, h, &x,
		    &y, err) == -1)
			return (-1);
		snprintf(where, sizeof where, "%s.to", at);
		if (screen_point(json_object_get(ev, "to"), where, w, h, &x2,
		    &y2, err) == -1 ||
		    screen_mouse_button(ev, at, &button, err) == -1)
			return (-1);
		screen_move(c, x, y, w, h);
		screen_button(c, button, 1);
		screen_move(c, x2, y2, w, h);
		screen_button(c, button, 0);
		return (0);
	}
	if (screen_point(ev, at, w, h, &x, &y, err) == -1)
		return (-1);
	screen_move(c, x, y, w, h);
	if (strcmp(type, "click") == 0) {
		if (screen_mouse_button(ev, at, &button, err) == -1)
			return (-1);
		n = json_is_true(json_object_get(ev, "double")) ? 2 : 1;
		for (i = 0; i < n; i++) {
			screen_button(c, button, 1);
			screen_button(c, button, 0);
		}
	} else if (strcmp(type, "scroll") == 0) {
		dy = json_object_get(ev, "dy");
		if (!json_is_integer(dy) || json_integer_value(dy) == 0 ||
		    json_integer_value(dy) < -SCREEN_SCROLL_MAX ||
		    json_integer_value(dy) > SCREEN_SCROLL_MAX) {
			snprintf(where, sizeof where, "%s.dy", at);
			return (serve_bad_field(err, where, "expected a "
			    "non-zero integer, -50 to 50 (> 0: down)"));
		}
		n = (int)llabs(json_integer_value(dy));
		for (i = 0; i < n; i++) {
			screen_button(c, json_integer_value(dy) > 0 ?
			    "wheel-down" : "wheel-up", 1);
			screen_button(c, json_integer_value(dy) > 0 ?
			    "wheel-down" : "wheel-up", 0);
		}
	}
	return (0);
}

/*
 * The request's {"events": [...]} as QMP calls, in order, on a w x h
 * screen: 0, or -1 with err (400 naming the field).
 */
int
screen_input_parse(json_t *j, int w, int h, struct screen_calls *c,
    struct serve_error *err)
{
	json_t		*events = json_object_get(j, "events"), *ev;
	const char	*type;
	char		 at[48];
	size_t		 i;
	int		 rc;

	if (!json_is_object(j) || !json_is_array(events) ||
	    json_array_size(events) == 0)
		return (serve_bad_field(err, "events", "expected a non-empty "
		    "array of events"));
	if (json_array_size(events) > SCREEN_EVENTS_MAX)
		return (serve_bad_field(err, "events", "more than 256 "
		    "events"));
	json_array_foreach(events, i, ev) {
		snprintf(at, sizeof at, "events[%zu]", i);
		type = json_string_value(json_object_get(ev, "type"));
		if (type == NULL) {
			snprintf(at, sizeof at, "events[%zu].type", i);
			return (serve_bad_field(err, at, "expected text, key, "
			    "move, click, drag or scroll"));
		}
		if (strcmp(type, "text") == 0)
			rc = screen_text(c, ev, at, err);
		else if (strcmp(type, "key") == 0)
			rc = screen_keys(c, ev, at, err);
		else if (strcmp(type, "move") == 0 ||
		    strcmp(type, "click") == 0 || strcmp(type, "drag") == 0 ||
		    strcmp(type, "scroll") == 0)
			rc = screen_mouse(c, ev, type, at, w, h, err);
		else {
			snprintf(at, sizeof at, "events[%zu].type", i);
			rc = serve_bad_field(err, at, "expected text, key, "
			    "move, click, drag or scroll");
		}
		if (rc == -1)
			return (-1);
		/* Texts add up: a body's worth would be a million calls. */
		if (c->n > SCREEN_CALLS_MAX)
			return (serve_bad_field(err, "events", "more than "
			    "20000 key and button changes in all"));
	}
	return (0);
}

void
screen_calls_free(struct screen_calls *c)
{
	size_t	i;

	for (i = 0; i < c->n; i++)
		free(c->args[i]);
	free(c->args);
	c->args = NULL;
	c->n = 0;
}
