require('left-pad-not-installed')
