"""What a fix command is made of, for the rules to quote: the install commands that fit this machine
(`install`) and paths as single shell words (`shell`). Not rules: no findings are raised here."""
