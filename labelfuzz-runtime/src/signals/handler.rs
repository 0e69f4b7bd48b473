//! The chained crash handler: records the signal and the target's frames, then hands over to
//! LibAFL's handler, which saves the reproducer and restarts the process.

use super::*;

/// The interrupted program counter and stack pointer, from the signal context.
pub(super) unsafe fn interrupted_pc_sp(context: *mut c_void) -> (usize, usize) {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        // SAFETY: the kernel passes a valid ucontext to SA_SIGINFO handlers.
        let gregs = unsafe { &(*(context as *const libc::ucontext_t)).uc_mcontext.gregs };
        (
            gregs[libc::REG_RIP as usize] as usize,
            gregs[libc::REG_RSP as usize] as usize,
        )
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
    {
        // SAFETY: as above.
        let mcontext = unsafe { &(*(context as *const libc::ucontext_t)).uc_mcontext };
        (mcontext.pc as usize, mcontext.sp as usize)
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        let _ = context;
        (0, 0)
    }
}

/// A fault that is not the target's current execution: one inside the fuzzer itself, or one
/// while a crash or timeout is being saved. LibAFL's handler would take it for a bug of its own
/// and wait for someone to type QUIT on stdin, which under a script never comes: the process
/// would spin for good. Another thread's fault while a save runs waits for that save to end the
/// process; a fault on the saving thread, or outside the target, ends it now, and the
/// restarting parent carries on from the last saved state.
unsafe fn fault_outside_the_target(signal: libc::c_int, during_a_save: bool) -> ! {
    // SAFETY: gettid, pause and _exit are async-signal-safe.
    unsafe {
        if during_a_save && HANDLING_THREAD.load(Ordering::SeqCst) != libc::gettid() {
            loop {
                libc::pause();
            }
        }
        let what: &[u8] = if during_a_save {
            b"while saving a crash or timeout"
        } else {
            b"outside the target"
        };
        crate::console::say_from_signal_handler(&[
            b"labelfuzz: signal ",
            crate::console::decimal(signal.unsigned_abs()).as_bytes(),
            b" ",
            what,
            b"; this process ends and the run goes on from its last saved state",
        ]);
        libc::_exit(128 + signal);
    }
}

pub(super) extern "C" fn record_site(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut c_void,
) {
    // SAFETY: runs as a signal handler; it only reads the context, walks the stack without
    // allocating and stores to atomics, then hands over to the previous handler.
    unsafe {
        if crate::interference::in_forked_child() {
            crate::interference::crash_in_forked_child(signal);
            return;
        }
        // The memory watcher's signal can arrive late: after the target returned (the execution
        // it meant is over), or while a crash is being saved. Handing it on would make LibAFL
        // save the wrong input, or take it for a crash inside its own handler and end the run.
        if is_memory_interrupt(signal, info)
            && (!target_running() || HANDLING_CRASH.load(Ordering::SeqCst))
        {
            if !target_running() {
                NOTED_ABORT.store(0, Ordering::SeqCst);
            }
            return;
        }
        // Inside malloc or free the allocator's lock may be held, and saving the input
        // allocates; inside the unwinder, walking the stack would corrupt it: the interrupt
        // waits for the watcher's next look.
        if is_memory_interrupt(signal, info)
            && defer::saving_must_wait(interrupted_pc_sp(context).0)
        {
            NOTED_ABORT.store(0, Ordering::SeqCst);
            MEMORY_INTERRUPT_DROPPED.store(true, Ordering::SeqCst);
            return;
        }
        let already_handling = begin_crash_handling();
        if already_handling || !target_running() {
            fault_outside_the_target(signal, already_handling);
        }
        // Saving follows: whatever the target took away, the save needs back.
        crate::interference::put_back();
        let (pc, sp) = interrupted_pc_sp(context);
        let fault = if info.is_null() {
            0
        } else {
            (*info).si_addr() as usize
        };
        LAST_STACK_OVERFLOW.store(
            signal == libc::SIGSEGV && sp != 0 && fault.abs_diff(sp) < STACK_FAULT_DISTANCE,
            Ordering::Relaxed,
        );
        let (lo, hi, base) = (
            EXE_START.load(Ordering::Relaxed),
            EXE_END.load(Ordering::Relaxed),
            EXE_BASE.load(Ordering::Relaxed),
        );
        let mut count = 0;
        backtrace::trace_unsynchronized(|frame| {
            RAW_IPS[count].store(frame.ip() as usize, Ordering::Relaxed);
            RAW_SPS[count].store(frame.sp() as usize, Ordering::Relaxed);
            count += 1;
            count < RAW_FRAMES
        });
        // Frames before the interrupted PC belong to this handler: start at the PC.
        let start = (0..count).find(|&i| RAW_IPS[i].load(Ordering::Relaxed) == pc);
        let entry = TARGET_ENTRY.load(Ordering::Relaxed);
        let mut kept = 0;
        let mut keep = |ip: usize| {
            if kept < MAX_FRAMES && ip >= lo && ip < hi {
                LAST_FRAMES[kept].store(ip - base, Ordering::Relaxed);
                kept += 1;
            }
        };
        match start {
            Some(first) => {
                for i in first..count {
                    if RAW_SPS[i].load(Ordering::Relaxed) >= entry {
                        break;
                    }
                    keep(RAW_IPS[i].load(Ordering::Relaxed));
                }
            }
            None => keep(pc),
        }
        LAST_FRAME_COUNT.store(kept, Ordering::Relaxed);
        LAST_FAULT_IN_EXE.store(pc >= lo && pc < hi, Ordering::Relaxed);
        LAST_SIGNAL.store(signal, Ordering::Relaxed);

        chain_to_previous(signal, info, context);
        end_crash_handling(already_handling);
    }
}

/// Hands the signal to the handler that was installed before ours (LibAFL's), or to the
/// default action.
unsafe fn chain_to_previous(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: the previous action was read with sigaction; its handler has the signature its
    // flags say, and is called as the kernel would.
    unsafe {
        match PREVIOUS[signal as usize].get().copied() {
            Some(previous) if previous.sa_flags & libc::SA_SIGINFO != 0 => {
                let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
                    std::mem::transmute(previous.sa_sigaction);
                crate::console::silenced_stderr(|| handler(signal, info, context));
            }
            Some(previous) if previous.sa_sigaction == libc::SIG_IGN => {}
            Some(previous) if previous.sa_sigaction != libc::SIG_DFL => {
                let handler: extern "C" fn(libc::c_int) =
                    std::mem::transmute(previous.sa_sigaction);
                handler(signal);
            }
            _ => {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
        }
    }
}
