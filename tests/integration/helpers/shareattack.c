/*
 * Test helper, run in the guest as root: one file-system call on a share,
 * made directly (busybox has no setfattr, no ACL tools, and its mknod and
 * install hide errno). Prints "OP ok" or "OP refused: REASON"; exits 0
 * only if the call succeeded.
 *
 *   shareattack chmod MODE PATH        chmod(2), MODE in octal
 *   shareattack creat MODE PATH        open(O_CREAT|O_EXCL|O_WRONLY, MODE)
 *   shareattack mkdir MODE PATH
 *   shareattack mknod c|b|p|r MAJ MIN PATH  (r: a regular file, MODE 04755)
 *   shareattack chown UID GID PATH     lchown(2)
 *   shareattack setxattr NAME VALUE PATH
 *   shareattack removexattr NAME PATH
 *   shareattack acl UID PATH           system.posix_acl_access: UID rwx
 *   shareattack write DATA PATH        truncate and write DATA
 */
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* <linux/posix_acl_xattr.h>'s layout, which musl does not ship. */
struct acl_entry {
	uint16_t	tag;
	uint16_t	perm;
	uint32_t	id;
};

static int
acl_set(const char *path, unsigned int uid)
{
	struct {
		uint32_t		version;
		struct acl_entry	e[5];
	} acl = { 2, {
		{ 0x01, 6, (uint32_t)-1 },	/* ACL_USER_OBJ rw- */
		{ 0x02, 7, 0 },			/* ACL_USER uid rwx */
		{ 0x04, 4, (uint32_t)-1 },	/* ACL_GROUP_OBJ r-- */
		{ 0x10, 7, (uint32_t)-1 },	/* ACL_MASK rwx */
		{ 0x20, 4, (uint32_t)-1 },	/* ACL_OTHER r-- */
	} };

	acl.e[1].id = uid;
	return (lsetxattr(path, "system.posix_acl_access", &acl, sizeof acl,
	    0));
}

static int
write_all(const char *path, const char *data)
{
	int	fd, rc;

	if ((fd = open(path, O_WRONLY|O_TRUNC)) == -1)
		return (-1);
	rc = write(fd, data, strlen(data)) == (ssize_t)strlen(data) ? 0 : -1;
	if (close(fd) == -1)
		rc = -1;
	return (rc);
}

int
main(int argc, char **argv)
{
	const char	*op = argc > 1 ? argv[1] : "";
	mode_t		 type;
	int		 rc, fd;

	if (strcmp(op, "chmod") == 0 && argc == 4)
		rc = chmod(argv[3], strtol(argv[2], NULL, 8));
	else if (strcmp(op, "creat") == 0 && argc == 4) {
		fd = open(argv[3], O_CREAT|O_EXCL|O_WRONLY,
		    (mode_t)strtol(argv[2], NULL, 8));
		rc = fd == -1 ? -1 : close(fd);
	} else if (strcmp(op, "mkdir") == 0 && argc == 4)
		rc = mkdir(argv[3], strtol(argv[2], NULL, 8));
	else if (strcmp(op, "mknod") == 0 && argc == 6) {
		switch (argv[2][0]) {
		case 'c':
			type = S_IFCHR | 0666;
			break;
		case 'b':
			type = S_IFBLK | 0666;
			break;
		case 'p':
			type = S_IFIFO | 0644;
			break;
		default:
			type = S_IFREG | 04755;
			break;
		}
		rc = mknod(argv[5], type, makedev(atoi(argv[3]),
		    atoi(argv[4])));
	} else if (strcmp(op, "chown") == 0 && argc == 5)
		rc = lchown(argv[4], atoi(argv[2]), atoi(argv[3]));
	else if (strcmp(op, "setxattr") == 0 && argc == 5)
		rc = lsetxattr(argv[4], argv[2], argv[3], strlen(argv[3]), 0);
	else if (strcmp(op, "removexattr") == 0 && argc == 4)
		rc = lremovexattr(argv[3], argv[2]);
	else if (strcmp(op, "acl") == 0 && argc == 4)
		rc = acl_set(argv[3], atoi(argv[2]));
	else if (strcmp(op, "write") == 0 && argc == 4)
		rc = write_all(argv[3], argv[2]);
	else {
		fprintf(stderr, "shareattack: bad arguments\n");
		return (2);
	}
	if (rc == -1) {
		printf("%s refused: %s\n", op, strerror(errno));
		return (1);
	}
	printf("%s ok\n", op);
	return (0);
}
