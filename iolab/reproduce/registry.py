"""Every headline claim of the five papers, in one registry: the paper's number or direction, the
tolerance decided before any run, the measurement that answers it, and what in iolab's setting differs.

Read a row as: *the paper says* ``statement`` (``where``); *iolab measures* ``measure`` by running
``experiment``; *it counts as reproduced when* ``criterion`` holds.  ``departures`` says what differs
from the paper's setting and why (empty: like for like); ``construction`` marks a claim whose agreement
would follow from iolab's own setting, never counted as reproduced (:mod:`iolab.reproduce.claim`).
``iolab reproduce`` runs the experiments (:mod:`iolab.reproduce.run`) and judges every claim here.
"""

from __future__ import annotations

from iolab.reproduce.claim import Claim
from iolab.reproduce.criteria import Between, Cannot, Each, Near, NearEach, SameSet, Share

# -- carretero2020 -----------------------------------------------------------------------------------
_C = "carretero2020"
_C_GEN = ("workloads drawn by §6.2.2's protocol with what it leaves open chosen by iolab: the I/O load "
          "truncated to [0.01, 2], Q_i from a truncated geometric law over the powers of two, and the "
          "paper's \"variance σ = 0.1\" read as a standard deviation of 0.1")
_C_SIM = ("simulated (the policy objects a real run's arbiter calls); the paper's Figs. 5-8 are real runs "
          "on the Tucan machine")
_C_POL = "iolab study carretero_policies: Table 1 x 8 policies x iteration batches (1, 2, 4, ..., 64)"
_C_MP = "iolab study carretero: 12 α_gen x 10 workloads x {First-Fit, S=1, S=α, S=1 longest remaining}"

CARRETERO = (
    Claim("carretero2020.s3.d", _C, "§3, Fig. 1", "4 applications together lose d = 2 %, 16 %, 11 % of the "
          "bandwidth (use cases A, B, C)",
          Cannot("the paper's measured law is iolab's input (presets lustre-plafrim-a/b/c define f(4) = 1 − d); "
                 "no Lustre of 4 OSS here, and this machine's disk loses nothing with 4 writers "
                 "(iolab storage probe)", "d = 2 %, 16 %, 11 %"),
          "carretero.s3.d", "the single-vs-multiple experiment simulated under each preset (a check of the input)",
          construction="the presets are defined as f(4) = 1 − d"),
    Claim("carretero2020.fig5.starving", _C, "Fig. 5, §6.1.2", "longest I/O and shortest remaining have the "
          "worst max stretch (starvation)", SameSet(("longest-io", "shortest-remaining")),
          "carretero.fig5.worst_two", _C_POL + "; the two policies with the largest max stretch at 64 batches",
          _C_SIM),
    Claim("carretero2020.fig5.fair", _C, "Fig. 5, §6.1.2", "stretch-oriented and bandwidth-oriented give a "
          "lower max stretch than FIFO", Each("<", 0.0, "max stretch below FIFO's"),
          "carretero.fig5.fair_vs_fifo", _C_POL + "; max stretch minus FIFO's at 64 batches", _C_SIM),
    Claim("carretero2020.fig7.starving", _C, "Fig. 7, §6.1.2", "a starving policy leaves an app with a stretch "
          "up to 1.8", Near(1.8, 0.1, side_of=1.0), "carretero.fig7.starving_max",
          _C_POL + "; the largest stretch under longest I/O or shortest remaining at 64 batches", _C_SIM),
    Claim("carretero2020.fig7.apps34", _C, "Fig. 7, §6.1.2", "apps 3 and 4 (the least compute-intensive) have "
          "the largest stretch, in general",
          Share(0.75, 0.5, "apps 3 and 4 largest under most policies"), "carretero.fig7.apps34",
          _C_POL + "; share of the 8 policies where apps 3 and 4 hold the two largest stretches (ties within "
          "0.5 %) at 64 batches", _C_SIM),
    Claim("carretero2020.fig7.steady", _C, "Fig. 7, §6.1.2", "after some iterations the stretch converges to a "
          "steady state", Share(1.0, 0.75, "steady from some batch count on"), "carretero.fig7.steady",
          _C_POL + "; share of policies whose max stretch at 8 batches is within 2 % of that at 64", _C_SIM),
    Claim("carretero2020.fig6.balanced", _C, "Figs. 6/8, §6.1.2", "stretch-oriented, shortest I/O and longest "
          "remaining give a shorter makespan than FIFO", Each("<", 0.0, "makespan below FIFO's"),
          "carretero.fig6.balanced_vs_fifo", _C_POL + "; makespan / FIFO's − 1 at 64 batches", _C_SIM),
    Claim("carretero2020.fig6.unbalanced", _C, "Figs. 6/8, §6.1.2", "longest I/O and shortest remaining behave "
          "poorly (longer makespan than FIFO)", Each(">", 0.0, "makespan above FIFO's"),
          "carretero.fig6.unbalanced_vs_fifo", _C_POL + "; makespan / FIFO's − 1 at 64 batches", _C_SIM),
    Claim("carretero2020.fig9.sim_vs_real", _C, "Fig. 9, §6.2.1", "simulator and real runs differ by at most "
          "15 % (geometric mean < 5 %) at 64 batches",
          Cannot("64 iteration batches of Table 1 last ~10^6 s of spec time per run, beyond real runs on this "
                 "2-core machine; iolab's own simulator-vs-real comparison of Table 1 at a reduced size is in "
                 "docs/results.md, Validation", "≤ 15 % max, < 5 % geo-mean"),
          "carretero.fig9.sim_vs_real", "none here (see iolab validate examples/table1-emulation.yaml)"),
    Claim("carretero2020.fig15.r1", _C, "Figs. 10, 15", "S=1 costs ~10 % of makespan on one I/O node "
          "(geometric mean 1.09 of First-Fit's)", Near(1.09, 0.05, relative=True, side_of=1.0),
          "carretero.fig15.r1", _C_MP, notes=_C_GEN),
    Claim("carretero2020.fig15.r3", _C, "Fig. 15", "with 3 I/O nodes S=1's makespan is 0.71 of First-Fit's "
          "(geometric mean)", Near(0.71, 0.05, relative=True, side_of=1.0), "carretero.fig15.r3", _C_MP, notes=_C_GEN),
    Claim("carretero2020.fig15.r5", _C, "Fig. 15", "with 5 I/O nodes S=1's makespan is 0.53 of First-Fit's "
          "(geometric mean)", Near(0.53, 0.05, relative=True, side_of=1.0), "carretero.fig15.r5", _C_MP, notes=_C_GEN),
    Claim("carretero2020.fig11.stretch", _C, "Fig. 11", "S=1 improves the stretch significantly over First-Fit",
          Between(0.0, 0.8, partly_lo=0.8, partly_hi=1.0), "carretero.fig11.stretch",
          _C_MP + "; geometric mean of the mean pack max stretch relative to First-Fit", notes=_C_GEN),
    Claim("carretero2020.fig10.salpha", _C, "Figs. 10-11", "S=α mitigates the makespan loss while keeping a "
          "stretch improvement", Each("<", 0.0, "S=α makespan below S=1's, stretch below First-Fit's"),
          "carretero.fig10.salpha", _C_MP + "; geometric means relative to First-Fit", notes=_C_GEN),
    Claim("carretero2020.fig11.policy", _C, "Figs. 10-11", "the I/O policy (FIFO or longest remaining) does not "
          "change makespan or stretch much", Each("<=", 0.10, "within 10 %"), "carretero.fig11.policy",
          _C_MP + "; |S=1 longest remaining / S=1 FIFO − 1| of makespan and stretch", notes=_C_GEN),
    Claim("carretero2020.fig12.packs", _C, "Fig. 12", "S=1 makes more packs than First-Fit, more as α grows; "
          "S=α fewer than S=1", Each(">", 0.0, "all three positive"), "carretero.fig12.packs", _C_MP, notes=_C_GEN),
    Claim("carretero2020.fig13.s1", _C, "Fig. 13", "S=1 runs within 20 % of the contention-free ideal",
          Share(0.95, 0.75, "within 20 %"), "carretero.fig13.s1",
          _C_MP + "; share of S=1 workloads whose one-node makespan is ≤ 1.2 x the packs' contention-free sum",
          notes=_C_GEN),
    Claim("carretero2020.fig13.ff", _C, "Fig. 13", "First-Fit can be 1000 % away from that ideal",
          Near(10.0, 0.5, relative=True, side_of=0.2), "carretero.fig13.ff",
          _C_MP + "; the largest First-Fit makespan / contention-free sum − 1 over the workloads", notes=_C_GEN),
    Claim("carretero2020.fig14.delay", _C, "Fig. 14", "S=1 moves ~25 % of node time from delay to idle",
          Near(0.25, 0.05, side_of=0.0), "carretero.fig14.delay_to_idle",
          _C_MP + "; (First-Fit's mean delay per node − S=1's) / First-Fit's mean makespan", notes=_C_GEN),
)

# -- lackner2019 -------------------------------------------------------------------------------------
_L = "lackner2019"
_L_SIM = ("iolab's batch simulator, not Batsim; the Feitelson-1996 constants the paper does not give (size and "
          "runtime laws, the checkpoint share 0.1 of the runtime) are iolab's (docs/batch-policies.md); Table I's "
          "arrival factor 500 s and §IV-B's ~10 % of the runtime for input + output are the paper's")
_L_FIGS = "iolab study lackner: 10 Feitelson workloads of 500 jobs, p = 0..1 by 0.05, 10 repetitions"
_L_THETA = ("iolab study lackner, Fig. 5: SAS at 4096 GB, k = 5, theta 0.025..1 by 0.025, 10 workloads")
_L_THETA_DEP = "one estimate draw per workload and theta (the paper: ten; the draw follows the workload's seed)"

LACKNER = (
    Claim("lackner2019.fig3.makespan", _L, "Fig. 3a", "SAS gives a shorter makespan than random assignment with "
          "any p (2048 and 4096 GB, k = 5)", Each("<", 0.0, "SAS below every p"), "lackner.fig3.makespan",
          _L_FIGS + "; SAS's mean over the best random p's mean − 1", notes=_L_SIM),
    Claim("lackner2019.fig3.turnaround", _L, "Fig. 3b", "SAS gives a shorter mean turnaround than random "
          "assignment with any p", Each("<", 0.0, "SAS below every p"), "lackner.fig3.turnaround",
          _L_FIGS + "; SAS's mean over the best random p's mean − 1", notes=_L_SIM),
    Claim("lackner2019.fig3.makespan_min", _L, "Fig. 3a", "random assignment's makespan is lowest around "
          "p = 0.6–0.8", Between(0.55, 0.85), "lackner.fig3.makespan_min_p",
          _L_FIGS + "; the minimum of the quadratic fit over p (the paper's own curve)", notes=_L_SIM),
    Claim("lackner2019.fig3.turnaround_min", _L, "Fig. 3b", "random assignment's mean turnaround is lowest "
          "towards p = 0.4", Between(0.35, 0.45), "lackner.fig3.turnaround_min_p",
          _L_FIGS + "; the minimum of the quadratic fit over p", notes=_L_SIM),
    Claim("lackner2019.fig3.sas_nodes", _L, "Figs. 3c, §V-A", "SAS keeps around 80 % of the nodes busy",
          Near(0.80, 0.05, side_of=0.0), "lackner.fig3.sas_node", _L_FIGS + "; Eq. 3, pooled over the workloads",
          notes=_L_SIM),
    Claim("lackner2019.fig3.sas_hps", _L, "Figs. 3d, §V-A", "SAS keeps around 70 % of the HPS used",
          Near(0.70, 0.05, side_of=0.0), "lackner.fig3.sas_hps", _L_FIGS + "; Eq. 3, pooled over the workloads",
          notes=_L_SIM),
    Claim("lackner2019.fig3.capacity", _L, "Fig. 3a", "the makespan is shorter with 4096 GB of HPS than with "
          "2048 GB (k = 5)", Each("<", 0.0, "4096 GB below 2048 GB"), "lackner.fig3.capacity",
          _L_FIGS + "; 4096 GB over 2048 GB − 1, SAS and the best random p", notes=_L_SIM),
    Claim("lackner2019.fig3.random_util", _L, "Figs. 3c-d", "under random assignment HPS utilisation grows "
          "steadily with p while node utilisation slumps", Each(">", 0.0, "both positive"),
          "lackner.fig3.random_util", _L_FIGS + "; at 2048 GB", notes=_L_SIM),
    Claim("lackner2019.fig4.sas_all_k", _L, "Fig. 4", "with R_stage = k R_lps, k ∈ {1, 2, 10}, SAS still mostly "
          "outperforms random assignment", Share(2 / 3, 1 / 3, "SAS below every p in most cases"),
          "lackner.fig4.sas_all_k", _L_FIGS + "; share of (k, makespan or turnaround) at 4096 GB where SAS beats "
          "the best random p", notes=_L_SIM),
    Claim("lackner2019.fig4.low_staging", _L, "Fig. 4, §V-A", "at low staging bandwidth (k = 1) more HPS capacity "
          "prolongs makespan and turnaround", Each(">", 0.0, "4096 GB above 2048 GB at k = 1"),
          "lackner.fig4.low_staging", _L_FIGS + "; Fig. 4 at both capacities; 4096 GB over 2048 GB − 1 at k = 1",
          notes=_L_SIM),
    Claim("lackner2019.fig4.k", _L, "Fig. 4, §V-A", "with R_stage close to R_lps makespan and turnaround are "
          "higher than with R_stage ≫ R_lps", Each(">", 0.0, "k = 1 above k = 5"), "lackner.fig4.k1_vs_k5",
          _L_FIGS + "; SAS at 4096 GB, k = 1 over k = 5 − 1", notes=_L_SIM),
    Claim("lackner2019.fig5.makespan", _L, "Fig. 5a, §V-B", "with inaccurate I/O estimates (theta up to 1) SAS "
          "still outperforms random assignment", Share(0.9, 0.5, "SAS below random's range"),
          "lackner.fig5.makespan", _L_THETA + "; share of theta where SAS's makespan is below the best random p's",
          _L_THETA_DEP, notes=_L_SIM),
    Claim("lackner2019.fig5.hps", _L, "Figs. 5b-c, §V-B", "as the estimates worsen fewer jobs use HPS and the HPS "
          "is less utilised", Each("<", 0.0, "both negative"), "lackner.fig5.hps", _L_THETA, _L_THETA_DEP, notes=_L_SIM),
    Claim("lackner2019.fig5.nodes", _L, "Fig. 5c, §V-B", "the estimates' accuracy has little influence on node "
          "utilisation", Near(0.0, 0.03), "lackner.fig5.nodes", _L_THETA + "; node utilisation at theta 1 − at 0",
          _L_THETA_DEP, notes=_L_SIM),
    Claim("lackner2019.fig5.turnaround", _L, "Fig. 5d, §V-B", "SAS's mean turnaround stays at the lower end of "
          "random assignment's range", Share(0.9, 0.5, "in the lowest quarter of the range"),
          "lackner.fig5.turnaround", _L_THETA + "; share of theta where SAS is in the lowest quarter of the range "
          "of random assignment's means over p", _L_THETA_DEP, notes=_L_SIM),
)

# -- monniot2023 -------------------------------------------------------------------------------------
_M = "monniot2023"
_M_WEEK = ("one week of Theta (2022, 57 I/O-intensive requests, one of 653 GB holding 61 % of the week's volume) for "
           "the paper's year of 2020 (~24 000 requests), which is not available; capacities scaled so that 32 TB-eq "
           "is the week's peak concurrent demand (peak scaling; the sum-cap scaling's runs are in the study's "
           "output); the 200 GB split threshold unscaled")
_M_GRID = ("iolab study monniot: Table 4's grid (4 layouts x 8-64 TB-eq x 4 algorithms x split on/off x requeue on/off), "
           "peak scaling")
_M_HET = ("iolab study monniot, layout hetero: Table 5's platform (2 SSD nodes of 5 x 1.6 TB, 4 HDD nodes of 2 x 2 TB, "
          "scaled to 32 TB-eq), best-bandwidth, split 200 GB")
_M_PEAK = "32 TB-eq is the week's peak demand, its one 653 GB request, which only 1N1D's single disk holds unsplit"
_M_CONTENTION = ("the week has at most 6 requests live at once and at most 2 on a disk: there is no contention to rank "
                 "the algorithms by")

MONNIOT = (
    Claim("monniot2023.fig4.no_split", _M, "Fig. 4 (top)", "without split only 1N1D reaches 100 % of sum_cap, at 32 "
          "and 64 TB", SameSet(("1N1D@32TB", "1N1D@64TB")), "monniot.fig4.no_split_full",
          _M_GRID + "; the layouts and capacities where some run reaches 100 %", _M_WEEK, _M_PEAK),
    Claim("monniot2023.fig4.no_split_others", _M, "Fig. 4 (top)", "without split the other layouts peak slightly "
          "above 60 % of sum_cap", Between(60.0, 70.0, unit=" %"), "monniot.fig4.no_split_others",
          _M_GRID + "; the best run of the layouts other than 1N1D", _M_WEEK),
    Claim("monniot2023.fig4.split64", _M, "Fig. 4 (bottom)", "with split at 200 GB every layout and algorithm reaches "
          "100 % at 64 TB", Share(1.0, 0.75, "every run at 100 %"), "monniot.fig4.split64", _M_GRID, _M_WEEK,
          "64 TB-eq is twice the week's peak demand"),
    Claim("monniot2023.fig4.split32", _M, "Fig. 4 (bottom)", "at 32 TB with split, worst-fit and random rank last "
          "(a few failures)", SameSet(("random", "worst-fit")), "monniot.fig4.split32_last",
          _M_GRID + "; the algorithms whose mean % of sum_cap at 32 TB-eq is below the best", _M_WEEK),
    Claim("monniot2023.fig4.split16", _M, "Fig. 4 (bottom), §5.2", "with split even 16 TB reaches 91–96 % of sum_cap",
          Between(91.0, 96.0, partly_lo=85.0, partly_hi=100.0, unit=" %"), "monniot.fig4.split16",
          _M_GRID + "; lowest and highest run at 16 TB-eq, 1N1D excluded", _M_WEEK),
    Claim("monniot2023.fig5.16tb", _M, "Fig. 5", "at 16 TB with split every disk ends up full at least once",
          Share(0.95, 0.5, "every disk full once"), "monniot.fig5.16tb",
          _M_GRID + "; share of disks whose use reaches 99.5 %, 1N1D excluded", _M_WEEK),
    Claim("monniot2023.fig5.32tb", _M, "Fig. 5", "at 32 TB only random and worst-fit fill a disk to 100 %",
          SameSet(("random", "worst-fit")), "monniot.fig5.32tb",
          _M_GRID + "; the algorithms with a disk at 99.5 % or more, 1N1D excluded", _M_WEEK),
    Claim("monniot2023.fig5.64tb", _M, "Fig. 5", "at 64 TB the best algorithms never use more than 50 % of a disk; "
          "worst-fit still fills one", Each("<", 0.0, "RR, BB ≤ 50 %; worst-fit 100 %"), "monniot.fig5.64tb",
          _M_GRID, _M_WEEK),
    Claim("monniot2023.fig5.mean_use", _M, "§5.2", "at 32 TB the average disk utilisation is very low (1.53 %): the "
          "year's jobs are sparse", Near(1.53, 0.5, unit=" %"), "monniot.fig5.mean_use",
          _M_GRID + "; mean over disks and runs of the time-averaged use at 32 TB-eq, split", _M_WEEK),
    Claim("monniot2023.fig6.fairness", _M, "Fig. 6", "round-robin and best-bandwidth spread allocations over the disks "
          "most evenly; worst-fit is the least fair",
          Cannot(_M_CONTENTION, "RR and BB least variable; worst-fit least fair"), "monniot.fig6.fairness",
          _M_GRID + "; s.d. of the max allocations per disk at 32 TB-eq, shown", _M_WEEK),
    Claim("monniot2023.fig7.8tb", _M, "Fig. 7", "at 8 TB round-robin and best-bandwidth fail or refuse less than half "
          "as many split requests as random (up to 217)", Between(0.0, 0.5), "monniot.fig7.8tb",
          _M_GRID + "; max (failed + refused) of RR and BB over random's, 1N1D excluded", _M_WEEK),
    Claim("monniot2023.fig7.32tb", _M, "Fig. 7", "at 32 TB no request is refused", Near(0.0, 0.0),
          "monniot.fig7.32tb_refused", _M_GRID + "; most refused requests of a run at 32 TB-eq, 1N1D excluded", _M_WEEK),
    Claim("monniot2023.fig7.64tb", _M, "Fig. 7", "at 64 TB no request fails or is refused", Near(0.0, 0.0),
          "monniot.fig7.64tb", _M_GRID + "; most failed + refused of a run at 64 TB-eq, 1N1D excluded", _M_WEEK),
    Claim("monniot2023.conclusion.32tb", _M, "§5.2, §6", "a 32 TB partition with split at 200 GB absorbs at least 99 % "
          "of the I/O-intensive jobs (best-bandwidth)", Between(99.0, 100.0, unit=" %"), "monniot.conclusion.32tb",
          _M_GRID + "; best-bandwidth's lowest % of sum_cap at 32 TB-eq, split, 1N1D excluded", _M_WEEK),
    Claim("monniot2023.fig8.ssd", _M, "Fig. 8, Table 5", "on the SSD+HDD platform best-bandwidth strongly favours the "
          "SSD nodes (more allocations per disk, mean and max)", Each(">", 0.0, "SSD above HDD"),
          "monniot.table5.ssd_favoured", _M_HET, _M_WEEK),
    Claim("monniot2023.fig8.pct", _M, "§5.2 (Table 5)", "on the SSD+HDD platform best-bandwidth reaches 97 % of sum_cap",
          Near(97.0, 3.0, unit=" %"), "monniot.table5.pct", _M_HET, _M_WEEK),
    Claim("monniot2023.fig8.ssd_first", _M, "§5.2 (Table 5)", "all SSD disks fill up before the HDDs are used",
          Share(1.0, 0.5, "every SSD full before the first HDD allocation"), "monniot.table5.ssd_first",
          _M_HET + "; share of SSD disks that reached 99.5 % before the first HDD allocation", _M_WEEK),
)

# -- soysal2019 --------------------------------------------------------------------------------------
_S = "soysal2019"
_S_SIM = ("iolab's batch simulator, not Alea: node ids lowest-free first and the planned sets by replaying the plan "
          "(Alea's node choice is not described); T_NAP from the last change of the planned node set; the paper's "
          "conservative backfilling with compression is iolab's conservative-reinsert")
_S_RUN = "iolab study soysal --no-advance: all of KTH-SP2 (27 992 jobs), FCFS and conservative, λ 1..0 and the predictor"
_S_TRACES = "the paper's ForHLR II (not published), CTC and SDSC SP2 logs are not here"

SOYSAL = (
    Claim("soysal2019.fig3a.kth", _S, "Fig. 3a, §4", "KTH's users request about 1.5 times the time they use",
          Near(1.5, 0.10, relative=True, side_of=1.0), "soysal.fig3a.kth",
          "total requested over total used time of KTH-SP2-1996-2.1-cln's jobs with a runtime"),
    Claim("soysal2019.fig3a.others", _S, "Fig. 3a, §4", "ForHLR II requests ~3.8, CTC ~2.1, SDSC ~2.6 times the time "
          "used", Cannot(_S_TRACES + "; SDSC-BLUE's ratio is shown, another machine", "3.8, 2.1, 2.6"),
          "soysal.fig3a.others", "the ratio of SDSC-BLUE-2000-4.2-cln (shown, not compared)"),
    Claim("soysal2019.fig4.fcfs_above", _S, "Figs. 4, 5, §4", "FCFS gives more long-term (> 600 s) node predictions "
          "than conservative backfilling", Share(1.0, 0.5, "FCFS above at every λ and the predictor"),
          "soysal.fig4.fcfs_above", _S_RUN + "; share of the estimates where FCFS's long-term share is higher",
          notes=_S_SIM),
    Claim("soysal2019.fig4.rise", _S, "Fig. 4, §4", "long-term predictions rise significantly only at λ ≤ 0.1 "
          "(conservative backfilling)", Between(0.0, 0.25, partly_lo=0.25, partly_hi=0.5), "soysal.fig4.rise",
          _S_RUN + "; the share of the rise from λ = 1 to 0 already there at λ = 0.2", notes=_S_SIM),
    Claim("soysal2019.fig4.fcfs_perfect", _S, "Fig. 4, §4", "FCFS with perfect estimates leaves (almost) only instant "
          "and long-term jobs", Between(0.9, 1.0, partly_lo=0.75, partly_hi=0.9), "soysal.fig4.fcfs_perfect",
          _S_RUN + "; instant + long-term share under FCFS at λ = 0", notes=_S_SIM),
    Claim("soysal2019.fig4.instant", _S, "Fig. 4, §4.1", "better estimates slightly raise the instant share under "
          "backfilling and hardly change it under FCFS", Each(">", 0.0, "both positive"), "soysal.fig4.instant",
          _S_RUN, notes=_S_SIM),
    Claim("soysal2019.fig5.gap", _S, "Fig. 5, §4", "a gap remains between λ = 0.01 and λ = 0: a small deviation "
          "already costs predictions", Each(">", 0.02, "λ 0 above λ 0.01 by > 2 points"), "soysal.fig5.gap",
          _S_RUN + "; long-term share at λ = 0 − at λ = 0.01, per scheduler", notes=_S_SIM),
    Claim("soysal2019.fig5.predictor", _S, "Fig. 5, §4", "on traces with good user estimates the predictor is no "
          "better than λ = 0.3", Each("<=", 0.0, "predictor at or below λ = 0.3"), "soysal.fig5.predictor",
          _S_RUN + "; long-term share of the predictor − of λ = 0.3, per scheduler", notes=_S_SIM),
    Claim("soysal2019.fig5.fcfs_later", _S, "Fig. 5, §4", "FCFS's T_NAP distribution rises later (longer valid "
          "predictions) than conservative backfilling's", Share(1.0, 0.5, "FCFS's median T_NAP higher everywhere"),
          "soysal.fig5.fcfs_later", _S_RUN + "; share of the estimates where FCFS's median non-instant T_NAP is higher",
          notes=_S_SIM),
    Claim("soysal2019.fig4.ctc", _S, "Fig. 4, §4", "CTC under conservative backfilling: long-term predictions ~10 % at "
          "λ = 1, ~26 % at 0.1, ~52 % at 0.01", Cannot(_S_TRACES, "10 %, 26 %, 52 %"), "soysal.fig4.ctc",
          "none here (the CTC log)"),
    Claim("soysal2019.fig5.forhlr", _S, "Figs. 4g, 5g, §4", "on ForHLR II the predictor comes close to λ = 0.01",
          Cannot(_S_TRACES, "predictor ≈ λ 0.01"), "soysal.fig5.forhlr", "none here (the ForHLR II log)"),
)

# -- dheenadayalan2017 -------------------------------------------------------------------------------
_D = "dheenadayalan2017"
_D_VOL = ("the NetApp volume's rate and loss are not published: fitted to DS1's two FCFS totals alone, with Fig. 1's "
          "premise (DS1's four writers load the volume), f(k) = 1 / (1 + gamma (k − 1)); §5's controller values and "
          "§4.2's AR(3) forecast kept; the jobs simulated (iolab's batch simulator), not LSF jobs on a filer")
_D_DS = ("DS2 and DS3 drawn to §5's description (Poisson arrivals, hyper-exponential service times; service times x "
         "1.29, arrivals every 700 s and DS3's draw fitted to Table 1's no-controller FCFS totals at 100 MB/s), their "
         "I/O volumes capped at 80 % of a job's time on the fitted volume; " + _D_VOL)
_D_PROTO = ("iolab reproduce dheenadayalan2017: the protocol of iolab/studies/dheenadayalan_protocol.py (fit on DS1, "
            "then DS1-3 x FCFS/EASY x controller off/on on the fitted volume)")


def _pct(a: str, b: str) -> float:
    """Table 1's controller effect in %, from two hh:mm:ss totals."""
    def sec(x):
        h, m, s_ = (int(v) for v in x.split(":"))
        return 3600 * h + 60 * m + s_
    return round(100 * (sec(b) / sec(a) - 1), 1)


_T1 = {"DS2 FCFS": ("256:06:14", "235:57:28", "298:28:12", "274:24:14"),
       "DS2 backfill": ("314:12:18", "295:16:17", "345:33:11", "323:02:10"),
       "DS3 FCFS": ("63:26:42", "57:58:39", "67:11:32", "61:03:05"),
       "DS3 backfill": ("65:12:12", "60:14:55", "69:03:22", "62:33:54")}


def _t1_claim(name: str) -> Claim:
    c0, c1, f0, f1 = _T1[name]
    ds, sched = name.split()
    return Claim(f"dheenadayalan2017.table1.{ds.lower()}_{sched.lower()}", _D, "Table 1",
                 f"on {ds} under {sched} the controller shortens the total completion and flow times",
                 NearEach({"completion": _pct(c0, c1), "flow": _pct(f0, f1)}, tol=3.0, side_of=0.0, unit=" %"),
                 f"dheena.table1.{ds}.{sched.lower()}", _D_PROTO + "; out of sample", _D_DS)


DHEENADAYALAN = (
    Claim("dheenadayalan2017.table1.ds1", _D, "Table 1", "on DS1 (FCFS) the controller shortens the total completion "
          "by 17.6 % (15:35:27 → 12:51:16)", Near(_pct("15:35:27", "12:51:16"), 3.0, side_of=0.0, unit=" %"),
          "dheena.ds1.effect", _D_PROTO + "; DS1 at the fit", _D_VOL,
          "the volume's two constants are fitted to these two totals"),
    Claim("dheenadayalan2017.fig1", _D, "Fig. 1", "DS1's I/O jobs are time-shared; the oldest I/O job and the CPU jobs "
          "are never suspended", Share(1.0, 2 / 3, "all three hold"), "dheena.fig1",
          _D_PROTO + "; share of the three properties DS1's controller run holds", _D_VOL,
          "the fit requires DS1's four writers to load the volume (Fig. 1's premise)"),
    _t1_claim("DS2 FCFS"), _t1_claim("DS2 backfill"), _t1_claim("DS3 FCFS"), _t1_claim("DS3 backfill"),
    Claim("dheenadayalan2017.table1.backfill_above", _D, "Table 1", "on DS2 the backfill queue's totals are above "
          "FCFS's without the controller (completion +22.7 %, flow +15.8 %)",
          NearEach({"completion": _pct("256:06:14", "314:12:18"), "flow": _pct("298:28:12", "345:33:11")}, tol=5.0,
                   side_of=0.0, unit=" %"),
          "dheena.table1.easy_above", _D_PROTO + "; EASY over FCFS − 1, no controller", _D_DS),
    Claim("dheenadayalan2017.table1.totals", _D, "Table 1", "DS2's and DS3's no-controller FCFS totals "
          "(256:06:14, 298:28:12; 63:26:42, 67:11:32)", NearEach({"DS2 completion": 0.0, "DS2 flow": 0.0,
                                                                   "DS3 completion": 0.0, "DS3 flow": 0.0},
                                                                  tol=10.0, side_of=None, unit=" %"),
          "dheena.table1.totals", _D_PROTO + "; iolab's totals over the paper's − 1", _D_DS,
          "the workload's constants were fitted to these totals (at 100 MB/s)"),
    Claim("dheenadayalan2017.s5.horizon", _D, "§5", "on DS2 the controller is 2.4 % and 6.4 % worse with t = 1 and "
          "5 min, 5.7 % and 7.8 % better with t = 2 and 3 min",
          NearEach({"t=1 min": 2.4, "t=2 min": -5.7, "t=3 min": -7.8, "t=5 min": 6.4}, tol=3.0, side_of=0.0,
                   unit=" %"), "dheena.horizon", _D_PROTO + "; DS2 FCFS with t = 1, 2, 3, 5 min", _D_DS),
    Claim("dheenadayalan2017.table1.prediction", _D, "Table 1", "the forecast t ahead gets the volume's state right "
          "94.2 %, 92.0 %, 93.4 % of the time (DS1, DS2, DS3)",
          NearEach({"DS1": 94.2, "DS2": 92.0, "DS3": 93.4}, tol=3.0, side_of=50.0, unit=" %"),
          "dheena.prediction", _D_PROTO + "; the AR(3) forecast of the controller runs' responses t = 3 min ahead, "
          "its state against r_threshold", _D_DS + "; the responses are the simulated volume's, not a filer's "
          "random-forest predictions"),
    Claim("dheenadayalan2017.table1.ds1_real", _D, "Table 1", "on DS1, on real processes, the controller shortens the "
          "total completion by 17.6 %", Near(_pct("15:35:27", "12:51:16"), 5.0, side_of=0.0, unit=" %"),
          "dheena.real.ds1", "iolab reproduce dheenadayalan2017 --real: DS1 on real MPI processes on the fitted volume, "
          "5 pairs (FCFS without and with the controller); the mean effect",
          "real Jacobi jobs on this machine at time scale 0.005 and bytes scale 1e-3, the volume paced at the fitted "
          "rate and law; the controller's d 45 s, omega 500 MB, recent 300 s and the tier probe (a 1 MB fsync'd write "
          "plus the law's answer), forced by the time scale and by Jacobi checkpoints (docs/studies.md)"),
)

CLAIMS: tuple[Claim, ...] = CARRETERO + LACKNER + MONNIOT + SOYSAL + DHEENADAYALAN

__all__ = ["CLAIMS"]
