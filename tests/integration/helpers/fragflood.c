/*
 * Test helper, run in the guest as root: flood the network with IPv4
 * fragments.
 *   fragflood udp ADDR PORT COUNT SIZE
 *	COUNT UDP datagrams of SIZE bytes to ADDR:PORT; the guest's kernel
 *	cuts each into MTU-sized fragments.
 *   fragflood raw ADDR COUNT
 *	COUNT lone middle fragments (offset 8, more fragments to come) of
 *	16000 bytes each, every one of a datagram of its own that never
 *	completes: what a reassembler would hold longest.
 * Prints "sent N" (N the datagrams or fragments the kernel took).
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RAW_LEN	16000

int
main(int argc, char **argv)
{
	struct sockaddr_in	 sin;
	unsigned char		*buf;
	long			 count, size, i, sent = 0;
	int			 fd, raw;

	if (argc < 4)
		return (2);
	raw = strcmp(argv[1], "raw") == 0;
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	if (inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1)
		return (2);
	if (raw) {
		count = atol(argv[3]);
		size = RAW_LEN;
	} else {
		if (argc != 6)
			return (2);
		sin.sin_port = htons((unsigned short)atoi(argv[3]));
		count = atol(argv[4]);
		size = atol(argv[5]);
	}
	if (count <= 0 || size <= 0 || size > 65507)
		return (2);
	if ((buf = calloc(1, (size_t)size)) == NULL)
		return (1);
	fd = raw ? socket(AF_INET, SOCK_RAW, IPPROTO_RAW) :
	    socket(AF_INET, SOCK_DGRAM, 0);
	if (fd == -1) {
		perror("socket");
		return (1);
	}
	for (i = 0; i < count; i++) {
		if (raw) {
			/* IPv4 header; the kernel fills in the checksum. */
			buf[0] = 0x45;
			buf[2] = (RAW_LEN >> 8) & 0xff;
			buf[3] = RAW_LEN & 0xff;
			buf[4] = ((i + 1) >> 8) & 0xff;	/* a datagram each */
			buf[5] = (i + 1) & 0xff;
			buf[6] = 0x20;			/* MF, offset 8 bytes */
			buf[7] = 0x01;
			buf[8] = 64;
			buf[9] = IPPROTO_UDP;
			buf[10] = buf[11] = 0;
			memset(buf + 12, 0, 4);		/* the kernel's source */
			memcpy(buf + 16, &sin.sin_addr, 4);
		}
		if (sendto(fd, buf, (size_t)size, 0, (struct sockaddr *)&sin,
		    sizeof sin) == -1) {
			if (errno == ENOBUFS || errno == EAGAIN ||
			    errno == ECONNREFUSED) {
				usleep(100);
				continue;
			}
			perror("sendto");
			return (1);
		}
		sent++;
	}
	printf("sent %ld\n", sent);
	return (0);
}
