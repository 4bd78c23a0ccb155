from benchlab.cli import main

raise SystemExit(main())
