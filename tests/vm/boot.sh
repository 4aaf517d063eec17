# SPDX-License-Identifier: BSD-3-Clause
# nbd-deadline: boot the AMIW guest (sourced by tests/vm/test-vm.sh and
# bench/amiw-vm.sh, which set tmp, KERNEL, INITRD, QEMU_ACCEL, VM_MEM).
#
#   vm_boot LOG APPEND
#
# Boots the kernel and initramfs of tests/vm/mkinitramfs.sh under qemu,
# one CPU, with APPEND (the guest's amiw.* parameters) on its command
# line and qemu's output in LOG.  The serial console is the FIFO pair
# $tmp/ser.in and $tmp/ser.out: the caller reads the guest's lines from
# $tmp/ser.out and answers on descriptor 4.  The guest's nbd-client
# reaches the server's UNIX socket $tmp/s2.sock through qemu's user
# network (restrict=on: nothing else).  Sets QEMU_PID.

vm_boot ()
{
    local log=$1 append=$2
    rm -f "$tmp/ser.in" "$tmp/ser.out"
    mkfifo "$tmp/ser.in" "$tmp/ser.out"
    qemu-system-x86_64 -accel "$QEMU_ACCEL" -m "$VM_MEM" -smp "${VM_SMP:-1}" \
        -display none -nodefaults -no-reboot \
        -kernel "$KERNEL" -initrd "$INITRD" \
        -append "console=ttyS0 quiet loglevel=4 panic=-1 $append" \
        -serial pipe:"$tmp/ser" \
        -chardev socket,id=nbd,path="$tmp/s2.sock" \
        -netdev user,id=n0,restrict=on,guestfwd=tcp:10.0.2.100:10809-chardev:nbd \
        -device virtio-net-pci,netdev=n0 > "$log" 2>&1 &
    QEMU_PID=$!
    exec 4>"$tmp/ser.in"
}
