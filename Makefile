# Driven by build.sh; plain make works too once the packages are installed.
B		?= build
CC		?= cc
MUSL_CC		?= musl-gcc
WARN		 = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
		   -Wpointer-arith -Wcast-qual
CFLAGS		?= -O2 -g
PKGS		 = lua5.4 libiso9660 libcdio libcurl
QSUP_CFLAGS	 = $(CFLAGS) $(WARN) $(WERROR) -std=gnu11 -D_GNU_SOURCE \
		   -Icore -Iguest -Ilua -Istaging $(shell pkg-config --cflags $(PKGS))
# libslirp's .pc wants glib's headers for nothing we use: linked by name.
QSUP_LIBS	 = -lev $(shell pkg-config --libs $(PKGS)) -lslirp -lanl \
		   -lmbedcrypto -lm

CORE_SRC	 = $(wildcard core/*.c) $(wildcard lua/*.c) $(wildcard staging/*.c)
CORE_OBJ	 = $(patsubst %.c,$(B)/obj/%.o,$(CORE_SRC)) $(B)/obj/lua/builtin.o
LIB_OBJ		 = $(filter-out $(B)/obj/core/main.o,$(CORE_OBJ))

AGENT_SRC	 = $(wildcard guest/agent*.c)
AGENT_CFLAGS	 = -Os -static -std=gnu11 -D_GNU_SOURCE $(WARN) $(WERROR) -Iguest

UNIT_SRC	 = $(wildcard tests/unit/*_test.c)
UNIT_BIN	 = $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))

GUEST		 = $(B)/guest/vmlinux $(B)/guest/initramfs.cpio

.PHONY: all tests clean
all: $(B)/qsup $(B)/qsup-agent $(GUEST)
tests: all $(UNIT_BIN)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(QSUP_CFLAGS) -MMD -MP -c $< -o $@

# Built-in profiles are compiled into the binary with .incbin.
$(B)/obj/lua/builtin.o: lua/builtin.S $(wildcard profiles/*.lua)
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@

$(B)/qsup: $(CORE_OBJ)
	$(CC) $(QSUP_CFLAGS) -o $@ $(CORE_OBJ) $(QSUP_LIBS)

$(B)/qsup-agent: $(AGENT_SRC) $(wildcard guest/*.h)
	@mkdir -p $(B)
	$(MUSL_CC) $(AGENT_CFLAGS) -o $@ $(AGENT_SRC)
	strip $@

$(B)/tests/%_test: tests/unit/%_test.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(QSUP_CFLAGS) -o $@ $< $(LIB_OBJ) $(QSUP_LIBS) -lcriterion

# The default guest: kernel and modules from Debian's linux-image-amd64,
# busybox, and the agent as PID 1 (guest/build-image.sh says how).
$(GUEST) &: guest/build-image.sh guest/modules.txt $(B)/qsup-agent $(B)/mkcpio
	guest/build-image.sh $(B)

$(B)/mkcpio: guest/mkcpio.c
	@mkdir -p $(B)
	$(CC) $(CFLAGS) $(WARN) $(WERROR) -o $@ $<

clean:
	rm -rf $(B)

-include $(CORE_OBJ:.o=.d)
