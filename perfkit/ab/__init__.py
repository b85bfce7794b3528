"""Two code versions compared on one machine: ``perfkit ab`` (run), its report (report), ``perfkit bisect``
(bisect), and what each side collects and a change touches (collected, touched)."""
