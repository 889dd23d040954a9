/*
 * Names for shell completion (qsup __complete): the settings --set takes,
 * with the values of those that have a fixed few, and the profile names
 * --profile resolves as profile_find() does. From the schema and the same
 * places profile_find() looks, so a completion cannot offer what qsup
 * would refuse, nor miss what it takes.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "profile_int.h"

static int
profile_complete_has(const char *s, const char *word)
{
	return (strncmp(s, word, strlen(word)) == 0);
}

/*
 * For a word without '=', "NAME=" of each setting it begins; for
 * "NAME=VALUE", "NAME=V" of each value NAME takes that begins with VALUE,
 * when they are a fixed few (true or false, or a choice). One a line.
 */
void
profile_complete_settings(struct buf *b, const char *word)
{
	static const struct profile_choice	 bools[] = {
		{ "true", 1, 0 }, { "false", 0, 0 }, { NULL, 0, 0 }
	};
	const struct profile_setting		*s;
	const struct profile_choice		*c;
	const char				*eq;
	size_t					 i;

	if ((eq = strchr(word, '=')) == NULL) {
		for (i = 0; i < PROFILE_NSETTINGS; i++) {
			if (profile_complete_has(profile_schema[i].name, word))
				buf_printf(b, "%s=\n", profile_schema[i].name);
		}
		return;
	}
	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		s = &profile_schema[i];
		if (strlen(s->name) != (size_t)(eq - word) ||
		    strncmp(s->name, word, eq - word) != 0)
			continue;
		c = s->type == PROFILE_T_BOOL ? bools : s->type ==
		    PROFILE_T_CHOICE ? s->choices : NULL;
		for (; c != NULL && c->name != NULL; c++) {
			if (!c->alias && profile_complete_has(c->name, eq + 1))
				buf_printf(b, "%s=%s\n", s->name, c->name);
		}
	}
}

/* NAME of each NAME.lua in dir that begins with word. */
static void
profile_complete_dir(struct buf *b, const char *dir, const char *word)
{
	DIR		*d;
	struct dirent	*de;
	size_t		 len;

	if (dir == NULL || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len > 4 && strcmp(de->d_name + len - 4, ".lua") == 0 &&
		    de->d_name[0] != '.' &&
		    profile_complete_has(de->d_name, word))
			buf_printf(b, "%.*s\n", (int)(len - 4), de->d_name);
	}
	closedir(d);
}

/*
 * The names --profile takes that begin with word, one a line: those of
 * ./NAME.lua and of the user's profile directory, then the built-in ones,
 * bare and as builtin:NAME. A name may come twice (a file that shadows a
 * built-in one); the shells make one of them.
 */
void
profile_complete_names(struct buf *b, const char *word)
{
	struct buf	 names = { 0 };
	char		*dir, *list, *name, *next;

	profile_complete_dir(b, ".", word);
	dir = profile_user_dir();
	profile_complete_dir(b, dir, word);
	free(dir);
	profile_builtin_names(&names);
	list = names.data != NULL ? names.data : "";
	for (name = list; name != NULL && *name != '\0'; name = next) {
		if ((next = strstr(name, ", ")) != NULL) {
			*next = '\0';
			next += 2;
		}
		if (profile_complete_has(name, word))
			buf_printf(b, "%s\n", name);
		if ((*word != '\0' && profile_complete_has("builtin:", word)) ||
		    (profile_complete_has(word, "builtin:") &&
		    profile_complete_has(name, word + 8)))
			buf_printf(b, "builtin:%s\n", name);
	}
	buf_free(&names);
}
