package afxdp

// eBPF instruction encoding (struct bpf_insn, 8 bytes, little endian):
// opcode byte, then dst register in the low nibble and src register in the
// high nibble, a signed 16-bit offset and a signed 32-bit immediate.
func insn(op uint8, dst, src uint8, off int16, imm int32) uint64 {
	return uint64(op) | uint64(dst&0xf)<<8 | uint64(src&0xf)<<12 |
		uint64(uint16(off))<<16 | uint64(uint32(imm))<<32
}

// Opcodes and constants the program uses (linux/bpf.h, linux/bpf_common.h).
const (
	opLdxMemW   = 0x61 // BPF_LDX | BPF_MEM | BPF_W: dst = *(u32 *)(src + off)
	opLdImm64   = 0x18 // BPF_LD | BPF_IMM | BPF_DW: dst = imm64 (two slots)
	opMov64Imm  = 0xb7 // BPF_ALU64 | BPF_MOV | BPF_K: dst = imm
	opCall      = 0x85 // BPF_JMP | BPF_CALL: r0 = helper imm(r1..r5)
	opExit      = 0x95 // BPF_JMP | BPF_EXIT: return r0
	pseudoMapFD = 1    // BPF_PSEUDO_MAP_FD: ld_imm64's imm is a map fd

	helperRedirectMap = 51 // BPF_FUNC_redirect_map
	xdpPass           = 2  // XDP_PASS
	xdpMdRxQueueIndex = 16 // offsetof(struct xdp_md, rx_queue_index)
)

// program returns the XDP program, redirecting every frame to the XSKMAP
// entry of the queue it arrived on and passing it to the kernel stack if
// that entry holds no socket:
//
//	r2 = *(u32 *)(r1 + 16)  ; r1 is the xdp_md context: key = rx_queue_index
//	r1 = map fd (ld_imm64)  ; the XSKMAP, rewritten to the map by the loader
//	r3 = XDP_PASS           ; flags: low bits are the action on a missing entry
//	call bpf_redirect_map   ; r0 = XDP_REDIRECT, or XDP_PASS
//	exit                    ; return r0
func program(mapFD int) []uint64 {
	return []uint64{
		insn(opLdxMemW, 2, 1, xdpMdRxQueueIndex, 0),
		insn(opLdImm64, 1, pseudoMapFD, 0, int32(mapFD)),
		0, // second half of ld_imm64: the upper 32 bits of the immediate
		insn(opMov64Imm, 3, 0, 0, xdpPass),
		insn(opCall, 0, 0, 0, helperRedirectMap),
		insn(opExit, 0, 0, 0, 0),
	}
}
