#include "kernels.hpp"

namespace cp {

const char* const kKernelsPtx = R"PTX(//
// cudaprobe kernels: noop, spin (busy-waits a number of SM clock cycles), fill (writes a u32
// pattern with a grid-stride loop).
//
.version 6.0
.target sm_50
.address_size 64

.visible .entry noop()
{
	ret;
}

.visible .entry spin(
	.param .u64 spin_cycles
)
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<6>;

	ld.param.u64 	%rd1, [spin_cycles];
	mov.u64 	%rd2, %clock64;
SPIN_LOOP:
	mov.u64 	%rd3, %clock64;
	sub.s64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	SPIN_LOOP;
	ret;
}

.visible .entry fill(
	.param .u64 fill_ptr,
	.param .u64 fill_count,
	.param .u32 fill_value
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<10>;

	ld.param.u64 	%rd1, [fill_ptr];
	ld.param.u64 	%rd2, [fill_count];
	ld.param.u32 	%r1, [fill_value];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	cvt.u64.u32 	%rd3, %r5;
	mov.u32 	%r6, %nctaid.x;
	mul.lo.s32 	%r7, %r6, %r3;
	cvt.u64.u32 	%rd4, %r7;
FILL_LOOP:
	setp.ge.u64 	%p1, %rd3, %rd2;
	@%p1 bra 	FILL_DONE;
	shl.b64 	%rd5, %rd3, 2;
	add.s64 	%rd6, %rd1, %rd5;
	st.global.u32 	[%rd6], %r1;
	add.s64 	%rd3, %rd3, %rd4;
	bra.uni 	FILL_LOOP;
FILL_DONE:
	ret;
}
)PTX";

}  // namespace cp
