; tests/guest/counter.asm: the test guest, an x86 BIOS program of a few
; sectors that turns a disk into a log of acknowledged writes.
;
; Sector 0 (the boot sector) sets up COM1 and loads the rest of the program
; (sectors 1..STAGE2_SECTORS) with int 13h AH=42h.  The program then reads
; the counter record at LBA COUNTER_LBA, prints "BOOT COUNTER=N" and loops:
; write N+1 (int 13h AH=43h), print "COUNTER=N+1" once the BIOS says the
; write is done, wait ~50 ms (int 15h AH=86h), read the record back and
; check it.  So every COUNTER line on the serial port is a write the disk
; acknowledged, and after a failover or a reboot the counter on the disk must
; be at least the last value printed.
;
; The record: 16 bytes of magic, the counter (32-bit little endian) and its
; bitwise complement (a torn or foreign sector does not pass for a counter).
; Lines end in CR LF.  Messages (each on its own line):
;   BOOT COUNTER=N            the value read at boot
;   COUNTER=N                 N written and acknowledged
;   WRITE-ERROR / READ-ERROR  int 13h failed; retried after a second
;   COUNTER-LOST READ=R ACKED=A
;                             the disk went back behind an acknowledged
;                             write (or ahead of anything written): halts
;   COUNTER-CORRUPT           the record is not a counter record: halts
;   NO-EDD / LOAD-ERROR       the BIOS cannot do this: halts
;   (SeaBIOS may print on COM1 too, "BOOT" may follow its text on a line.)
; It runs under SeaBIOS (QEMU's BIOS) with the disk on virtio-blk, which the
; tests use, or on IDE or SATA: SeaBIOS gives them all int 13h extensions.
; It is not a real guest: it never flushes (the BIOS disk services have no
; flush), so "acknowledged" means what QEMU's cache mode makes of a write.
; Assemble with: nasm -f bin -o counter.bin counter.asm (see build.sh).

bits 16
org 0x7c00

%ifndef COUNTER_LBA
%define COUNTER_LBA 2048
%endif
STAGE2_SECTORS equ 3
BUF equ 0x9000			; one sector, for the counter record
DELAY_US equ 50000		; between two writes
RETRY_US equ 1000000		; after an I/O error

start:
	cli
	cld
	xor ax, ax
	mov ds, ax
	mov es, ax
	mov ss, ax
	mov sp, 0x7c00
	sti
	mov [drive], dl
	call serial_init
	; int 13h extensions (EDD): every drive of SeaBIOS has them.
	mov ah, 0x41
	mov bx, 0x55aa
	mov dl, [drive]
	int 0x13
	jc .noedd
	cmp bx, 0xaa55
	jne .noedd
	mov si, dap_load
	mov ah, 0x42
	mov dl, [drive]
	int 0x13
	jc .loaderr
	jmp stage2
.noedd:
	mov si, msg_noedd
	jmp halt_msg
.loaderr:
	mov si, msg_loaderr
	; fall through
halt_msg:
	call puts
halt:
	cli
	hlt
	jmp halt

serial_init:			; COM1 115200 8N1, no interrupts
	mov dx, 0x3f9
	xor al, al
	out dx, al
	mov dx, 0x3fb
	mov al, 0x80
	out dx, al
	mov dx, 0x3f8
	mov al, 1
	out dx, al
	mov dx, 0x3f9
	xor al, al
	out dx, al
	mov dx, 0x3fb
	mov al, 3
	out dx, al
	ret

putc:				; AL to COM1
	push dx
	push ax
.wait:
	mov dx, 0x3fd
	in al, dx
	test al, 0x20
	jz .wait
	pop ax
	mov dx, 0x3f8
	out dx, al
	pop dx
	ret

puts:				; NUL-terminated string at DS:SI; keeps AX
	push ax
.next:
	lodsb
	test al, al
	jz .ret
	call putc
	jmp .next
.ret:
	pop ax
	ret

drive db 0
; disk address packet: load the program right after the boot sector
dap_load:
	db 16, 0
	dw STAGE2_SECTORS
	dw 0x7e00, 0
	dq 1
msg_noedd db "NO-EDD", 13, 10, 0
msg_loaderr db "LOAD-ERROR", 13, 10, 0

	times 510-($-$$) db 0
	dw 0xaa55

; ---- sectors 1..STAGE2_SECTORS ----------------------------------------------

stage2:
	call read_record
	jnc .boot
	mov si, msg_readerr
	call puts
	mov cx, RETRY_US >> 16
	mov dx, RETRY_US & 0xffff
	call delay
	jmp stage2
.boot:
	call check_record
	jc corrupt
	mov [acked], eax
	mov [attempted], eax
	mov si, msg_boot
	call puts
	call put_dec_crlf
.next:
	mov eax, [acked]
	cmp eax, [attempted]	; a failed write: go on from what the disk has
	jne .reread
	inc eax
	mov [attempted], eax
	call write_record
	jc .writeerr
	mov eax, [attempted]
	mov [acked], eax
	mov si, msg_counter
	call puts
	call put_dec_crlf
	mov cx, DELAY_US >> 16
	mov dx, DELAY_US & 0xffff
	call delay
.reread:
	call read_record
	jc .readerr
	call check_record
	jc corrupt
	; acked <= value read <= attempted, else the disk lost a write
	cmp eax, [acked]
	jb lost
	cmp eax, [attempted]
	ja lost
	mov [acked], eax
	mov [attempted], eax
	jmp .next
.writeerr:
	mov si, msg_writeerr
	jmp .retry
.readerr:
	mov si, msg_readerr
.retry:
	call puts
	mov cx, RETRY_US >> 16
	mov dx, RETRY_US & 0xffff
	call delay
	jmp .reread

lost:
	push eax
	mov si, msg_lost
	call puts
	pop eax
	call put_dec
	mov si, msg_acked
	call puts
	mov eax, [acked]
	call put_dec_crlf
	jmp halt

corrupt:
	mov si, msg_corrupt
	jmp halt_msg

; read_record / write_record: the record at BUF; CF set on error.
read_record:
	mov ah, 0x42
	jmp disk_io
write_record:
	; build the record: magic, value, complement
	mov si, magic
	mov di, BUF
	mov cx, 16
	rep movsb
	mov [BUF + 16], eax
	not eax
	mov [BUF + 20], eax
	mov ah, 0x43
	xor al, al		; no verify
disk_io:
	mov word [dap_rec + 2], 1	; the BIOS may have changed the count
	mov si, dap_rec
	mov dl, [drive]
	int 0x13
	ret

; check_record: EAX = the counter, CF set unless BUF holds a valid record.
check_record:
	mov si, magic
	mov di, BUF
	mov cx, 16
	repe cmpsb
	jne .bad
	mov eax, [BUF + 16]
	mov edx, [BUF + 20]
	not edx
	cmp eax, edx
	jne .bad
	clc
	ret
.bad:
	stc
	ret

; delay: wait CX:DX microseconds (int 15h AH=86h; a busy loop if the BIOS
; refuses).
delay:
	mov ah, 0x86
	int 0x15
	jnc .ret
	mov ecx, 0x01000000
.spin:
	dec ecx
	jnz .spin
.ret:
	ret

put_dec_crlf:
	call put_dec
	mov si, crlf
	jmp puts

put_dec:			; EAX in decimal
	mov ebx, 10
	xor cx, cx
.div:
	xor edx, edx
	div ebx
	push dx
	inc cx
	test eax, eax
	jnz .div
.out:
	pop ax
	add al, '0'
	call putc
	loop .out
	ret

acked dd 0
attempted dd 0
dap_rec:
	db 16, 0
	dw 1
	dw BUF, 0
	dq COUNTER_LBA
magic db "REPLAGENT-COUNT1"
msg_boot db "BOOT COUNTER=", 0
msg_counter db "COUNTER=", 0
msg_writeerr db "WRITE-ERROR", 13, 10, 0
msg_readerr db "READ-ERROR", 13, 10, 0
msg_lost db "COUNTER-LOST READ=", 0
msg_acked db " ACKED=", 0
msg_corrupt db "COUNTER-CORRUPT", 13, 10, 0
crlf db 13, 10, 0

	times (1 + STAGE2_SECTORS) * 512 - ($-$$) db 0
