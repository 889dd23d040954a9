/*
 * Test helper, run in the guest: write to a file through a shared writable
 * mapping. Exit 0 if the write reached the file, 1 if any step was refused.
 */
#include <sys/mman.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	char	*p;
	int	 fd;

	if (argc != 2)
		return (2);
	if ((fd = open(argv[1], O_RDWR)) == -1) {
		perror("open O_RDWR");
		return (1);
	}
	p = mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return (1);
	}
	memcpy(p, "MMAP", 4);
	if (msync(p, 4096, MS_SYNC) == -1) {
		perror("msync");
		return (1);
	}
	return (0);
}
